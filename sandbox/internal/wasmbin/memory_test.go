package wasmbin

import "testing"

// wasmModule assembles a module from sections, each its id followed by its content.
func wasmModule(sections ...[]byte) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		b = append(b, s[0])
		b = appendU32(b, uint32(len(s)-1))
		b = append(b, s[1:]...)
	}
	return b
}

func wasmName(s string) []byte { return append(appendU32(nil, uint32(len(s))), s...) }

func cat(parts ...[]byte) (out []byte) {
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestMinMemoryReadsTheFirstMemorysMinimum(t *testing.T) {
	types := []byte{sectionType, 1, 0x60, 0, 0} // one type: () -> ()
	for _, c := range []struct {
		name string
		m    []byte
		want uint64
		ok   bool
	}{
		{"own, with a maximum", wasmModule(cat([]byte{sectionMemory, 1, 1}, appendU32(nil, 52), appendU32(nil, 300))), 52 << 16, true},
		{"own, no maximum", wasmModule(cat([]byte{sectionMemory, 1, 0}, appendU32(nil, 192))), 192 << 16, true},
		{"none", wasmModule(types), 0, true},
		// A function, a table and a global imported before the memory: their encodings are skipped.
		{"imported after other imports", wasmModule(types, cat([]byte{sectionImport, 4},
			wasmName("env"), wasmName("f"), []byte{0, 0},
			wasmName("env"), wasmName("t"), []byte{1, 0x70, 1, 2, 9},
			wasmName("env"), wasmName("g"), []byte{3, 0x7f, 0},
			wasmName("env"), wasmName("memory"), []byte{2, 0, 3})), 3 << 16, true},
		{"64-bit", wasmModule([]byte{sectionMemory, 1, 4, 1}), 0, false},
		{"truncated section", wasmModule([]byte{sectionMemory, 1, 1, 52})[:12], 0, false},
		{"not wasm", []byte("\x00asm\x02\x00\x00\x00"), 0, false},
	} {
		got, ok := MinMemory(c.m)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: MinMemory = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
