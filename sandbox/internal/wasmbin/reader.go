package wasmbin

import "errors"

var errEnd = errors.New("unexpected end of module")

// Reader decodes the binary format from Buf at Pos. It is strict about
// LEB128 (an encoding too long for its type, or past the end, is an error),
// and sticky: after the first error every read returns zero and Err stays.
type Reader struct {
	Buf []byte
	Pos int
	Err error
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.Err != nil {
		return 0
	}
	if r.Pos >= len(r.Buf) {
		r.Err = errEnd
		return 0
	}
	c := r.Buf[r.Pos]
	r.Pos++
	return c
}

// U32 reads an unsigned LEB128 u32.
func (r *Reader) U32() uint32 {
	var v uint64
	for shift := 0; shift < 35; shift += 7 {
		c := r.Byte()
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if v > 1<<32-1 {
				r.fail(errors.New("u32 overflow"))
			}
			return uint32(v)
		}
	}
	r.fail(errors.New("u32 too long"))
	return 0
}

// S32 reads a signed LEB128 i32.
func (r *Reader) S32() int32 {
	var v int64
	for shift := 0; shift < 35; shift += 7 {
		c := r.Byte()
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			if shift < 63 && c&0x40 != 0 {
				v |= -1 << (shift + 7) // sign-extend
			}
			if v < -1<<31 || v > 1<<31-1 {
				r.fail(errors.New("s32 overflow"))
			}
			return int32(v)
		}
	}
	r.fail(errors.New("s32 too long"))
	return 0
}

// Name reads a name (a length-prefixed byte string).
func (r *Reader) Name() string {
	n := r.U32()
	if r.Err != nil || uint64(r.Pos)+uint64(n) > uint64(len(r.Buf)) {
		r.fail(errEnd)
		return ""
	}
	s := string(r.Buf[r.Pos : r.Pos+int(n)])
	r.Pos += int(n)
	return s
}

// Limits reads a limits record (of a memory or table) and returns its minimum.
func (r *Reader) Limits() uint32 {
	flags := r.Byte()
	min := r.U32()
	if flags&1 != 0 {
		r.U32()
	}
	return min
}

// fail records err unless an earlier error is already recorded.
func (r *Reader) fail(err error) {
	if r.Err == nil {
		r.Err = err
	}
}
