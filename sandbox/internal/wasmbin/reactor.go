package wasmbin

import (
	"bytes"
	"errors"
	"fmt"
)

// A Refusal is a module shape that pre-initialisation will not snapshot,
// because it cannot prove the snapshot starts every instance as
// _initialize would have. Its text says what the module has.
type Refusal struct{ Reason string }

func (e *Refusal) Error() string { return e.Reason }

func refuse(format string, args ...any) error { return &Refusal{Reason: fmt.Sprintf(format, args...)} }

// Section ids.
const (
	sectionCustom   = 0
	sectionType     = 1
	sectionImport   = 2
	sectionFunction = 3
	sectionTable    = 4
	sectionMemory   = 5
	sectionGlobal   = 6
	sectionExport   = 7
	sectionStart    = 8
	sectionCode     = 10
	sectionTag      = 13
)

// Value types of globals and signatures.
const (
	typeI32 = 0x7f
	typeI64 = 0x7e
	typeF32 = 0x7d
	typeF64 = 0x7c
)

// InitExport is the WASI reactor's initialisation function.
const InitExport = "_initialize"

// FuncImport is a function the module imports, with its signature as value
// type bytes (0x7f i32, 0x7e i64, 0x7d f32, 0x7c f64, 0x6f externref, 0x70 funcref).
type FuncImport struct {
	Module, Name    string
	Params, Results []byte
}

type section struct {
	id                  byte
	start, content, end int // header, content, end offsets in the module
}

type global struct {
	typ     byte
	mutable bool
	init    []byte // the constant expression, end included
}

// Reactor is a WASI reactor module checked for pre-initialisation: one
// memory of its own, no imported globals or tables, no start function,
// an _initialize export of type [] → [], and code that cannot change a
// table or drop a segment.
type Reactor struct {
	module   []byte
	sections []section
	imports  []FuncImport
	globals  []global // defined globals (none are imported)
	memFlags byte
	memMax   uint32
}

// Imports are the functions the module imports, in order.
func (m *Reactor) Imports() []FuncImport { return m.imports }

// ParseReactor reads module and checks that pre-initialisation can
// snapshot it. A shape it refuses is a *Refusal; a module it cannot read is
// another error.
func ParseReactor(module []byte) (*Reactor, error) {
	if len(module) < 8 || !bytes.Equal(module[:8], []byte("\x00asm\x01\x00\x00\x00")) {
		return nil, errors.New("not a WebAssembly binary module (version 1)")
	}
	p := &parser{m: &Reactor{module: module}, initFunc: -1}
	r := &Reader{Buf: module, Pos: 8}
	for r.Pos < len(module) {
		start := r.Pos
		id := r.Byte()
		size := r.U32()
		if r.Err != nil || uint64(r.Pos)+uint64(size) > uint64(len(module)) {
			return nil, fmt.Errorf("truncated section at byte %d", start)
		}
		s := section{id: id, start: start, content: r.Pos, end: r.Pos + int(size)}
		p.m.sections = append(p.m.sections, s)
		if err := p.section(s); err != nil {
			return nil, err
		}
		r.Pos = s.end
	}
	return p.m, p.finish()
}

// parser holds what ParseReactor needs across sections.
type parser struct {
	m         *Reactor
	types     [][2][]byte // params, results
	funcTypes []uint32    // of every function, imported first
	memories  int
	initFunc  int64
}

func (p *parser) section(s section) error {
	r := &Reader{Buf: p.m.module[:s.end], Pos: s.content}
	var err error
	switch s.id {
	case sectionType:
		err = p.typeSection(r)
	case sectionImport:
		err = p.importSection(r)
	case sectionFunction:
		for n := r.U32(); n > 0 && r.Err == nil; n-- {
			p.funcTypes = append(p.funcTypes, r.U32())
		}
	case sectionTable:
		err = tableSection(r)
	case sectionMemory:
		err = p.memorySection(r)
	case sectionGlobal:
		err = p.globalSection(r)
	case sectionExport:
		err = p.exportSection(r)
	case sectionStart:
		return refuse("the module has a start function, which runs before _initialize at every instantiation")
	case sectionCode:
		err = codeSection(r, len(p.m.imports))
	case sectionDataCount:
		return refuse("the module has passive data segments (a data count section), which a snapshot would change")
	case sectionTag:
		return refuse("the module uses exception handling (a tag section)")
	}
	if err == nil && r.Err != nil {
		err = fmt.Errorf("malformed section %d: %w", s.id, r.Err)
	}
	return err
}

func (p *parser) typeSection(r *Reader) error {
	for n := r.U32(); n > 0 && r.Err == nil; n-- {
		if form := r.Byte(); form != 0x60 {
			return refuse("the module has a type of form 0x%02x (only function types are supported)", form)
		}
		var sig [2][]byte
		for i := range sig {
			k := r.U32()
			if uint64(r.Pos)+uint64(k) > uint64(len(r.Buf)) {
				return errors.New("truncated type")
			}
			sig[i] = r.Buf[r.Pos : r.Pos+int(k)]
			r.Pos += int(k)
		}
		p.types = append(p.types, sig)
	}
	return nil
}

func (p *parser) importSection(r *Reader) error {
	for n := r.U32(); n > 0 && r.Err == nil; n-- {
		mod, name := r.Name(), r.Name()
		switch kind := r.Byte(); kind {
		case 0:
			t := r.U32()
			if int(t) >= len(p.types) {
				return fmt.Errorf("import %s.%s has an unknown type %d", mod, name, t)
			}
			p.funcTypes = append(p.funcTypes, t)
			p.m.imports = append(p.m.imports, FuncImport{Module: mod, Name: name, Params: p.types[t][0], Results: p.types[t][1]})
		case 1:
			return refuse("the module imports a table (%s.%s), which its host could change", mod, name)
		case 2:
			return refuse("the module imports its memory (%s.%s): only a memory of its own can be snapshotted", mod, name)
		case 3:
			return refuse("the module imports a global (%s.%s): only globals of its own can be snapshotted", mod, name)
		default:
			return refuse("the module imports %s.%s of kind %d", mod, name, kind)
		}
	}
	return nil
}

func tableSection(r *Reader) error {
	for n := r.U32(); n > 0 && r.Err == nil; n-- {
		if r.Byte() == 0x40 {
			return refuse("the module has a table with an initialiser expression")
		}
		flags := r.Byte()
		if flags > 1 {
			return refuse("the module has a table with limits flags 0x%02x (shared or 64-bit)", flags)
		}
		r.U32()
		if flags == 1 {
			r.U32()
		}
	}
	return nil
}

func (p *parser) memorySection(r *Reader) error {
	n := r.U32()
	p.memories += int(n)
	if n != 1 {
		return refuse("the module defines %d memories: only one can be snapshotted", n)
	}
	flags := r.Byte()
	switch {
	case flags >= 4:
		return refuse("the module's memory is 64-bit (memory64)")
	case flags >= 2:
		return refuse("the module's memory is shared (threads)")
	}
	p.m.memFlags = flags
	r.U32()
	if flags&1 != 0 {
		p.m.memMax = r.U32()
	}
	return nil
}

func (p *parser) globalSection(r *Reader) error {
	for n := r.U32(); n > 0 && r.Err == nil; n-- {
		g := global{typ: r.Byte(), mutable: r.Byte() == 1}
		start := r.Pos
		if err := constExpr(r); err != nil {
			return err
		}
		g.init = r.Buf[start:r.Pos]
		if g.mutable && g.typ != typeI32 && g.typ != typeI64 && g.typ != typeF32 && g.typ != typeF64 {
			return refuse("the module has a mutable global of type 0x%02x (only numbers can be snapshotted)", g.typ)
		}
		p.m.globals = append(p.m.globals, g)
	}
	return nil
}

// constExpr reads a constant expression up to and including its end.
func constExpr(r *Reader) error {
	for r.Err == nil {
		op := r.Byte()
		if op == opEnd {
			return nil
		}
		if _, err := scanInstr(r, op); err != nil {
			return err
		}
	}
	return r.Err
}

func (p *parser) exportSection(r *Reader) error {
	for n := r.U32(); n > 0 && r.Err == nil; n-- {
		name, kind, idx := r.Name(), r.Byte(), r.U32()
		switch {
		case kind == 1:
			return refuse("the module exports a table (%q), which its host could change", name)
		case kind == 0 && name == InitExport:
			p.initFunc = int64(idx)
		case kind == 0 && (name == "__wasm_call_ctors" || name == "hs_init"):
			// Extism runs these itself at an instance's first call: they would
			// run again on the snapshot.
			return refuse("the module exports %s, which its host runs at every instance besides _initialize", name)
		}
	}
	return nil
}

func codeSection(r *Reader, imported int) error {
	n := r.U32()
	for i := uint32(0); i < n && r.Err == nil; i++ {
		size := r.U32()
		end := r.Pos + int(size)
		if r.Err != nil || uint64(r.Pos)+uint64(size) > uint64(len(r.Buf)) {
			return errors.New("truncated function body")
		}
		for groups := r.U32(); groups > 0 && r.Err == nil; groups-- {
			r.U32()
			r.Byte()
		}
		op, err := scanBody(r, end)
		if err != nil {
			return refuse("function %d: %v", imported+int(i), err)
		}
		if op != "" {
			return refuse("function %d uses %s, which changes state a snapshot does not carry (tables, segments)", imported+int(i), op)
		}
		r.Pos = end
	}
	return nil
}

func (p *parser) finish() error {
	if p.memories == 0 {
		return refuse("the module has no memory of its own")
	}
	if p.initFunc < 0 {
		return refuse("the module exports no %s: only a WASI reactor (Go: -buildmode=c-shared) can be pre-initialised", InitExport)
	}
	if int(p.initFunc) < len(p.m.imports) {
		return refuse("the module's %s is an imported function", InitExport)
	}
	if int(p.initFunc) >= len(p.funcTypes) || int(p.funcTypes[p.initFunc]) >= len(p.types) {
		return fmt.Errorf("%s names function %d, which the module does not define", InitExport, p.initFunc)
	}
	if sig := p.types[p.funcTypes[p.initFunc]]; len(sig[0]) != 0 || len(sig[1]) != 0 {
		return refuse("the module's %s takes or returns values", InitExport)
	}
	return nil
}
