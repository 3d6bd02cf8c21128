package wasmbin

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzMergeData starts from raw bytes, so it rarely gets past the header to
// a data section worth merging. FuzzMergeDataDifferential builds a valid
// module from every input instead: one to four pages of memory, an optional
// immutable global and data count section, and up to 64 segments of every
// kind the merge must handle or leave alone (active at an i32.const offset,
// in range, overlapping, negative or past the memory; passive; at a
// global.get offset). Unmodified wazero instantiates the original and the
// merged module; both must fail, or both succeed with the same memory.

// fuzzModule decodes spec into a module. Byte 0: bit 0 a data count
// section, bit 1 a global, bits 2-3 the pages less one; byte 1: the gap
// (and the global's value). Then each segment: a kind byte, a 16-bit
// offset, a length byte and that many data bytes (fewer if spec ends).
func fuzzModule(spec []byte) (module []byte, gap int) {
	if len(spec) < 2 {
		return nil, 0
	}
	flags, gap := spec[0], int(spec[1])
	dataCount, global, pages := flags&1 != 0, flags&2 != 0, 1+int(flags>>2&3)
	section := func(id byte, content []byte) []byte {
		return append(appendU32([]byte{id}, uint32(len(content))), content...)
	}
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, section(5, []byte{1, 0, byte(pages)})...)
	if global { // (global i32 (i32.const gap*8)): a global.get offset reads it
		b = append(b, section(6, append(appendS32([]byte{1, 0x7f, 0, opI32Const}, int32(gap)*8), opEnd))...)
	}
	var segs []byte
	n := 0
	for rest := spec[2:]; len(rest) >= 4 && n < 64; n++ {
		kind, off, size := rest[0]%8, binary.LittleEndian.Uint16(rest[1:3]), int(rest[3])
		rest = rest[4:]
		data := rest[:min(size, len(rest))]
		rest = rest[len(data):]
		switch {
		case kind == 6: // passive
			segs = append(segs, 1)
		case kind == 7 && global: // active at global.get 0
			segs = append(segs, 0, 0x23, 0, opEnd)
		default: // active at an i32.const: mostly near each other, sometimes negative or far
			o := int32(off)
			switch kind {
			case 4:
				o = int32(int16(off))
			case 5:
				o = int32(off) * int32(pages) * 2
			}
			segs = append(segs, 0, opI32Const)
			segs = append(appendS32(segs, o), opEnd)
		}
		segs = append(appendU32(segs, uint32(len(data))), data...)
	}
	if dataCount {
		b = append(b, section(sectionDataCount, appendU32(nil, uint32(n)))...)
	}
	return append(b, section(sectionData, append(appendU32(nil, uint32(n)), segs...))...), gap
}

func FuzzMergeDataDifferential(f *testing.F) {
	seg := func(kind byte, off uint16, data string) []byte {
		return append([]byte{kind, byte(off), byte(off >> 8), byte(len(data))}, data...)
	}
	spec := func(flags, gap byte, segs ...[]byte) []byte {
		return append([]byte{flags, gap}, bytes.Join(segs, nil)...)
	}
	f.Add(spec(0, 16, seg(0, 0, "ab"), seg(0, 5, "cd"), seg(0, 9, "e")))
	f.Add(spec(0, 255, seg(0, 20, "AAAA"), seg(0, 0, "BB"), seg(0, 30, "CC"), seg(0, 2, "DD"), seg(0, 8, "EE")))
	f.Add(spec(0, 8, seg(0, 0, "abcd"), seg(0, 2, "XY")))
	f.Add(spec(1, 8, seg(0, 0, "ab"), seg(0, 3, "cd")))
	f.Add(spec(2, 1, seg(0, 0, "ab"), seg(7, 0, "gg"), seg(0, 4, "cd")))
	f.Add(spec(0, 4, seg(0, 0, "x"), seg(6, 0, "passive"), seg(0, 2, "y")))
	f.Add(spec(4, 32, seg(0, 65530, "abcdefgh"), seg(0, 65539&0xffff, "z"), seg(5, 40000, "far")))
	f.Add(spec(0, 2, seg(4, 0xffff, "neg"), seg(0, 3, "after")))
	f.Fuzz(func(t *testing.T, spec []byte) {
		m, gap := fuzzModule(spec)
		if m == nil {
			return
		}
		out, _, _ := MergeData(m, gap)
		if len(out) == len(m) && &out[0] == &m[0] {
			return // left alone: wazero compiles the original
		}
		want, werr := memoryAfterInstantiation(t, m)
		got, gerr := memoryAfterInstantiation(t, out)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("merged module instantiates differently (errors %v / %v)\noriginal %x\nmerged   %x", werr, gerr, m, out)
		}
	})
}

// The generator reaches what the target is for: its seeds include modules
// MergeData rewrites and modules it must leave alone, all valid for wazero.
func TestFuzzModuleSeedsAreValidAndSomeAreMerged(t *testing.T) {
	merged, alone := 0, 0
	for _, spec := range [][]byte{
		{0, 16, 0, 0, 0, 2, 'a', 'b', 0, 5, 0, 2, 'c', 'd'},
		{1, 16, 0, 0, 0, 2, 'a', 'b', 0, 5, 0, 2, 'c', 'd'},
	} {
		m, gap := fuzzModule(spec)
		if _, err := memoryAfterInstantiation(t, m); err != nil {
			t.Fatalf("%x: %v", m, err)
		}
		if _, before, after := MergeData(m, gap); after < before {
			merged++
		} else {
			alone++
		}
	}
	if merged != 1 || alone != 1 {
		t.Fatalf("merged %d, left alone %d; want 1 and 1 (the data count one is left alone)", merged, alone)
	}
}
