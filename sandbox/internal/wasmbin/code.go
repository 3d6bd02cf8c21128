package wasmbin

import (
	"errors"
	"fmt"
)

// S64 reads a signed LEB128 value of up to 64 bits (an i64.const, or a
// block type, which is an s33).
func (r *Reader) S64() int64 {
	var v int64
	for shift := 0; shift < 70; shift += 7 {
		c := r.Byte()
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			if shift < 63 && c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v
		}
	}
	r.fail(errors.New("s64 too long"))
	return 0
}

// Skip moves past n bytes.
func (r *Reader) Skip(n int) {
	if r.Err != nil {
		return
	}
	if n < 0 || r.Pos+n > len(r.Buf) {
		r.fail(errEnd)
		return
	}
	r.Pos += n
}

// A code scan reports the first instruction that changes state
// pre-initialisation cannot carry into a snapshot: a table's contents or
// size, or which data and element segments remain (they would have to be
// replayed, and the snapshot replaces the data segments).
var stateOps = map[uint32]string{
	0x26:        "table.set",
	0xfc00 | 8:  "memory.init",
	0xfc00 | 9:  "data.drop",
	0xfc00 | 12: "table.init",
	0xfc00 | 13: "elem.drop",
	0xfc00 | 14: "table.copy",
	0xfc00 | 15: "table.grow",
	0xfc00 | 17: "table.fill",
}

// errSIMD and errUnknownOp say why a body could not be scanned.
var (
	errSIMD      = errors.New("SIMD instructions, which pre-initialisation does not analyse")
	errAtomics   = errors.New("atomic instructions (threads)")
	errUnknownOp = errors.New("an instruction pre-initialisation does not know")
)

// scanBody decodes the instructions of one function body (or constant
// expression) in b[r.Pos:end] and returns the name of the first state
// operation among them ("" if none), or an error if an instruction cannot
// be decoded.
func scanBody(r *Reader, end int) (string, error) {
	for r.Pos < end && r.Err == nil {
		op := r.Byte()
		name, err := scanInstr(r, op)
		if err != nil {
			return "", err
		}
		if name != "" {
			return name, nil
		}
	}
	if r.Err != nil {
		return "", r.Err
	}
	if r.Pos != end {
		return "", errors.New("instruction runs past its function's end")
	}
	return "", nil
}

// Immediates of an opcode: what follows it in the instruction stream.
const (
	immUnknown   = iota
	immNone      // most instructions
	immU32       // an index, a label, a memory
	immU32x2     // call_indirect: type and table
	immBlockType // block, loop, if: an s33
	immBrTable   // a vector of labels and a default
	immSelectT   // select with a vector of value types
	immMemArg    // loads and stores: alignment (with a memory index) and offset
	immI32
	immI64
	immF32
	immF64
	immByte // ref.null: a reference type
	immFC   // 0xFC prefix
	immSIMD // 0xFD prefix
	immAtom // 0xFE prefix
)

var immediates = func() (t [256]byte) {
	set := func(kind byte, ops ...int) {
		for _, op := range ops {
			t[op] = kind
		}
	}
	set(immNone, 0x00, 0x01, 0x05, 0x0b, 0x0f, 0x1a, 0x1b, 0xd1)
	for op := 0x45; op <= 0xc4; op++ {
		t[op] = immNone
	}
	set(immBlockType, 0x02, 0x03, 0x04)
	set(immU32, 0x0c, 0x0d, 0x10, 0x12, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x3f, 0x40, 0xd2)
	set(immBrTable, 0x0e)
	set(immU32x2, 0x11, 0x13)
	set(immSelectT, 0x1c)
	for op := 0x28; op <= 0x3e; op++ {
		t[op] = immMemArg
	}
	set(immI32, 0x41)
	set(immI64, 0x42)
	set(immF32, 0x43)
	set(immF64, 0x44)
	set(immByte, 0xd0)
	set(immFC, 0xfc)
	set(immSIMD, 0xfd)
	set(immAtom, 0xfe)
	return t
}()

// scanInstr reads the immediates of one instruction whose opcode op is
// read, and returns its name if it is a state operation.
func scanInstr(r *Reader, op byte) (string, error) {
	switch immediates[op] {
	case immNone:
	case immU32:
		r.U32()
	case immU32x2:
		r.U32()
		r.U32()
	case immBlockType, immI64:
		r.S64()
	case immBrTable:
		for n := r.U32(); n > 0 && r.Err == nil; n-- {
			r.U32()
		}
		r.U32()
	case immSelectT:
		r.Skip(int(r.U32()))
	case immMemArg:
		if r.U32()&0x40 != 0 { // multi-memory: a memory index follows
			r.U32()
		}
		r.U32()
	case immI32:
		r.S32()
	case immF32:
		r.Skip(4)
	case immF64:
		r.Skip(8)
	case immByte:
		r.Byte()
	case immFC:
		return scanFC(r)
	case immSIMD:
		return "", errSIMD
	case immAtom:
		return "", errAtomics
	default:
		return "", fmt.Errorf("%w (opcode 0x%02x)", errUnknownOp, op)
	}
	return stateOps[uint32(op)], nil
}

// scanFC reads a 0xFC-prefixed instruction (saturating conversions, bulk
// memory, tables).
func scanFC(r *Reader) (string, error) {
	sub := r.U32()
	switch {
	case sub <= 7: // trunc_sat
	case sub == 9, sub == 11, sub == 13, sub == 15, sub == 16, sub == 17:
		r.U32()
	case sub == 8, sub == 10, sub == 12, sub == 14:
		r.U32()
		r.U32()
	default:
		return "", fmt.Errorf("%w (opcode 0xfc %d)", errUnknownOp, sub)
	}
	return stateOps[0xfc00|sub], nil
}
