package sandbox

import (
	"errors"
	"fmt"
)

// moduleInfo is what Load needs to know about a module before compiling it:
// its exported functions (to pick the ABI) and the initial size of its memory
// (to refuse, with a clear message, a module that cannot fit its limit).
type moduleInfo struct {
	exports  []string // exported functions, in order
	minPages uint32   // initial pages of the defined or imported memory
	extism   bool     // imports from "extism:host/env" (an Extism plugin)
	goBuilt  bool     // has Go's "go:buildid" custom section
}

func (m moduleInfo) exportSet() map[string]bool {
	s := make(map[string]bool, len(m.exports))
	for _, e := range m.exports {
		s[e] = true
	}
	return s
}

// parseModuleInfo reads the import, memory and export sections of a binary
// module. It is not a validator: compilation still validates the module.
func parseModuleInfo(b []byte) (moduleInfo, error) {
	var info moduleInfo
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return info, errors.New("not a WebAssembly binary module")
	}
	r := &wasmReader{b: b, pos: 8}
	for r.pos < len(r.b) {
		id := r.byte()
		size := r.u32()
		end := r.pos + int(size)
		if r.err != nil || end > len(r.b) {
			return info, errors.New("truncated section")
		}
		switch id {
		case 0: // custom
			if r.name() == "go:buildid" {
				info.goBuilt = true
			}
		case 2: // imports
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				if r.name() == "extism:host/env" {
					info.extism = true
				}
				r.name()
				switch kind := r.byte(); kind {
				case 0:
					r.u32()
				case 1:
					r.byte()
					r.limits()
				case 2:
					info.minPages = r.limits()
				case 3:
					r.byte()
					r.byte()
				default:
					return info, fmt.Errorf("unknown import kind %d", kind)
				}
			}
		case 5: // memories
			if n := r.u32(); n > 0 {
				info.minPages = r.limits()
			}
		case 7: // exports
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				name := r.name()
				kind := r.byte()
				r.u32()
				if kind == 0 {
					info.exports = append(info.exports, name)
				}
			}
		}
		if r.err != nil {
			return info, r.err
		}
		r.pos = end
	}
	return info, nil
}

type wasmReader struct {
	b   []byte
	pos int
	err error
}

func (r *wasmReader) byte() byte {
	if r.pos >= len(r.b) {
		r.err = errors.New("unexpected end of module")
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *wasmReader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			break
		}
	}
	return v
}

func (r *wasmReader) name() string {
	n := int(r.u32())
	if r.err != nil || r.pos+n > len(r.b) {
		r.err = errors.New("unexpected end of module")
		return ""
	}
	s := string(r.b[r.pos : r.pos+n])
	r.pos += n
	return s
}

// limits reads a limits record and returns its minimum.
func (r *wasmReader) limits() uint32 {
	flags := r.byte()
	min := r.u32()
	if flags&1 != 0 {
		r.u32()
	}
	return min
}
