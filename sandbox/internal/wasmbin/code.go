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

// scanInstr reads the immediates of one instruction whose opcode op is
// read, and returns its name if it is a state operation.
func scanInstr(r *Reader, op byte) (string, error) {
	switch {
	case op <= 0x01, op == 0x05, op == 0x0b, op == 0x0f, op == 0x1a, op == 0x1b,
		op >= 0x45 && op <= 0xc4, op == 0xd1: // no immediates
	case op >= 0x02 && op <= 0x04: // block, loop, if: a block type
		r.S64()
	case op == 0x0c, op == 0x0d, op == 0x10, op == 0x12, op >= 0x20 && op <= 0x25,
		op == 0x3f, op == 0x40, op == 0xd2:
		r.U32()
	case op == 0x0e: // br_table
		for n := r.U32(); n > 0 && r.Err == nil; n-- {
			r.U32()
		}
		r.U32()
	case op == 0x11, op == 0x13: // call_indirect, return_call_indirect
		r.U32()
		r.U32()
	case op == 0x1c: // select t*
		r.Skip(int(r.U32()))
	case op == 0x26:
		r.U32()
		return stateOps[0x26], nil
	case op >= 0x28 && op <= 0x3e: // loads and stores: a memarg
		if r.U32()&0x40 != 0 { // multi-memory: a memory index follows
			r.U32()
		}
		r.U32()
	case op == 0x41:
		r.S32()
	case op == 0x42:
		r.S64()
	case op == 0x43:
		r.Skip(4)
	case op == 0x44:
		r.Skip(8)
	case op == 0xd0:
		r.Byte()
	case op == 0xfc:
		return scanFC(r)
	case op == 0xfd:
		return "", errSIMD
	case op == 0xfe:
		return "", errAtomics
	default:
		return "", fmt.Errorf("%w (opcode 0x%02x)", errUnknownOp, op)
	}
	return "", nil
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
