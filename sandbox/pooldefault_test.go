package sandbox

import (
	"testing"
)

// memoryModule is a module with one memory of min pages (below 128).
func memoryModule(pages byte) []byte {
	return append([]byte("\x00asm\x01\x00\x00\x00"), 5, 3, 1, 0, pages)
}

func TestDefaultPoolSizeIsBoundedByInitialMemory(t *testing.T) {
	for _, c := range []struct {
		name string
		wasm []byte
		want int
	}{
		{"3.25 MiB (a pre-initialised Go plugin)", memoryModule(52), 16},
		{"8 MiB", append([]byte("\x00asm\x01\x00\x00\x00"), 5, 4, 1, 0, 0x80, 0x01), 8},
		{"12 MiB (the JS runtime)", append([]byte("\x00asm\x01\x00\x00\x00"), 5, 4, 1, 0, 0xc0, 0x01), 5},
		{"no memory", []byte("\x00asm\x01\x00\x00\x00"), 16},
		{"unreadable", []byte("\x00asm\x01\x00\x00\x00\x05\x09"), 4},
	} {
		if got := defaultPoolSize(c.wasm); got != c.want {
			t.Errorf("%s: defaultPoolSize = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestPoolSizeZeroTakesTheDefaultAndAnExplicitOneIsKept(t *testing.T) {
	r := newTestRuntime(t)
	for _, c := range []struct {
		size, want int
	}{{0, 16}, {2, 2}} {
		p := load(t, r, Config{Name: "guest", Wasm: fixtures.guest, PoolSize: c.size, Preinit: PreinitOn,
			Tools: tools(map[string]string{"counter": ""})})
		if got := cap(p.pool.slots); got != c.want {
			t.Errorf("PoolSize %d: %d instances, want %d", c.size, got, c.want)
		}
	}
}
