package wasmbin

import "bytes"

// MinMemory returns the initial size in bytes of module's first linear memory (its
// own or imported), 0 when it has none; ok is false when module cannot be read or its
// memory is 64-bit.
func MinMemory(module []byte) (size uint64, ok bool) {
	if len(module) < 8 || !bytes.Equal(module[:8], []byte("\x00asm\x01\x00\x00\x00")) {
		return 0, false
	}
	r := &Reader{Buf: module, Pos: 8}
	for r.Pos < len(module) && r.Err == nil {
		id := r.Byte()
		n := r.U32()
		if r.Err != nil || uint64(r.Pos)+uint64(n) > uint64(len(module)) {
			return 0, false
		}
		s := &Reader{Buf: module[:r.Pos+int(n)], Pos: r.Pos}
		r.Pos += int(n)
		var pages uint32
		var found bool
		switch id {
		case sectionImport:
			pages, found = importedMemory(s)
		case sectionMemory:
			if s.U32() > 0 {
				pages, found = memoryLimits(s)
			}
		}
		if s.Err != nil {
			return 0, false
		}
		if found && pages == ^uint32(0) {
			return 0, false
		}
		if found {
			return uint64(pages) * 65536, true
		}
	}
	return 0, r.Err == nil
}

// importedMemory reads an import section up to its first memory, if any.
func importedMemory(r *Reader) (pages uint32, found bool) {
	for n := r.U32(); n > 0 && r.Err == nil; n-- {
		r.Name()
		r.Name()
		switch kind := r.Byte(); kind {
		case 0: // function: type index
			r.U32()
		case 1: // table: reference type, limits
			r.Byte()
			r.Limits()
		case 2:
			return memoryLimits(r)
		case 3: // global: value type, mutability
			r.Byte()
			r.Byte()
		case 4: // tag: attribute, type index
			r.Byte()
			r.U32()
		default:
			return ^uint32(0), true
		}
	}
	return 0, false
}

// memoryLimits reads a memory type and returns its minimum in pages; a 64-bit memory's
// is ^uint32(0) (not read here).
func memoryLimits(r *Reader) (uint32, bool) {
	flags := r.Byte()
	if flags&4 != 0 {
		return ^uint32(0), true
	}
	min := r.U32()
	if flags&1 != 0 {
		r.U32()
	}
	return min, true
}
