package memory_test

import (
	"testing"

	"github.com/agenthost/agenthost/memory"
	"github.com/agenthost/agenthost/memory/memorytest"
)

func TestInMemoryStoreConforms(t *testing.T) {
	memorytest.Run(t, func(*testing.T) memory.Store { return &memory.InMemory{} })
}

func TestTermsCarryNoSearchSyntax(t *testing.T) {
	got := memory.FTS5Query(memory.Terms(`What "tea" OR name:* NEAR(x y) 4711 Tee TEE`))
	if want := `"tea" OR "name" OR "near" OR "4711" OR "tee"`; got != want {
		t.Fatalf("FTS5Query = %s, want %s", got, want)
	}
	if got := memory.Terms(string(make([]byte, 0)) + "a b c"); len(got) != 0 {
		t.Fatalf("one-letter words kept: %q", got)
	}
}
