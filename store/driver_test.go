package store

import (
	"context"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// A kind no imported package registered is an error that says what to import, never a
// nil store.
func TestAStoreKindNotLinkedNamesThePackageToImport(t *testing.T) {
	st, err := OpenDriver(context.Background(), "postgres", "postgres://127.0.0.1:1/x", Options{})
	if st != nil || err == nil || err.Error() != "a postgres store is not linked into this program: import github.com/agenthost/agenthost/store/postgres" {
		t.Fatalf("store %v, err %v", st, err)
	}
}

// A kind is registered once: a second driver for it is a program error, found at start.
func TestRegisteringAStoreKindTwicePanics(t *testing.T) {
	open := func(context.Context, string, Options) (loop.SessionStore, error) { return loop.NewMemoryStore(), nil }
	Register("test-twice", open)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "twice") {
			t.Fatalf("recovered %v", r)
		}
	}()
	Register("test-twice", open)
}
