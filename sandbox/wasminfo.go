package sandbox

import (
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/sandbox/internal/wasmbin"
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
	r := &wasmbin.Reader{Buf: b, Pos: 8}
	for r.Pos < len(r.Buf) {
		id := r.Byte()
		size := r.U32()
		end := r.Pos + int(size)
		if r.Err != nil || end > len(r.Buf) {
			return info, errors.New("truncated section")
		}
		if err := info.readSection(r, id); err != nil {
			return info, err
		}
		if r.Err != nil {
			return info, r.Err
		}
		r.Pos = end
	}
	return info, nil
}

// readSection reads what info needs from the section id at r; r.Err is the reader's error.
func (info *moduleInfo) readSection(r *wasmbin.Reader, id byte) error {
	switch id {
	case 0: // custom
		if r.Name() == "go:buildid" {
			info.goBuilt = true
		}
	case 2: // imports
		return info.readImports(r)
	case 5: // memories
		if n := r.U32(); n > 0 {
			info.minPages = r.Limits()
		}
	case 7: // exports
		for n := r.U32(); n > 0 && r.Err == nil; n-- {
			name := r.Name()
			kind := r.Byte()
			r.U32()
			if kind == 0 {
				info.exports = append(info.exports, name)
			}
		}
	}
	return nil
}

func (info *moduleInfo) readImports(r *wasmbin.Reader) error {
	for n := r.U32(); n > 0 && r.Err == nil; n-- {
		if r.Name() == "extism:host/env" {
			info.extism = true
		}
		r.Name()
		switch kind := r.Byte(); kind {
		case 0:
			r.U32()
		case 1:
			r.Byte()
			r.Limits()
		case 2:
			info.minPages = r.Limits()
		case 3:
			r.Byte()
			r.Byte()
		default:
			return fmt.Errorf("unknown import kind %d", kind)
		}
	}
	return nil
}
