package wasmbin

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strconv"
)

// GlobalExportPrefix names the exports Instrument adds: the prefix and the
// index of a mutable global.
const GlobalExportPrefix = "agenthost:preinit:global:"

// ClockSection is the custom section a snapshot ends with: the monotonic
// clock reading (ns, u64 LEB128) its _initialize ran up to, so instances
// can continue the clock from there instead of going back in time, then the
// sha256 of every byte before the section, so that a snapshot read back
// from a cache is known whole (Clock).
const ClockSection = "agenthost:preinit"

// MutableGlobals lists the indices of the module's mutable globals, in order.
func (m *Reactor) MutableGlobals() []int {
	var idx []int
	for i, g := range m.globals {
		if g.mutable {
			idx = append(idx, i)
		}
	}
	return idx
}

// Instrument returns the module with every mutable global exported as
// GlobalExportPrefix+index, so that the host can read them after
// _initialize (an api.Module only reads exported globals). Nothing else
// changes.
func (m *Reactor) Instrument() []byte {
	var extra []byte
	n := 0
	for _, i := range m.MutableGlobals() {
		name := GlobalExportPrefix + strconv.Itoa(i)
		extra = appendU32(extra, uint32(len(name)))
		extra = append(extra, name...)
		extra = append(extra, 3) // global
		extra = appendU32(extra, uint32(i))
		n++
	}
	return m.rebuild(map[byte]func() []byte{
		sectionExport: func() []byte {
			count, body := m.exports(false)
			return append(appendU32(nil, count+uint32(n)), append(body, extra...)...)
		},
	}, nil)
}

// exports returns the export section's entries (without _initialize when
// dropInit) and their count.
func (m *Reactor) exports(dropInit bool) (uint32, []byte) {
	s, ok := m.find(sectionExport)
	if !ok {
		return 0, nil
	}
	r := &Reader{Buf: m.module[:s.end], Pos: s.content}
	var out []byte
	var count uint32
	for n := r.U32(); n > 0 && r.Err == nil; n-- {
		start := r.Pos
		name, kind := r.Name(), r.Byte()
		r.U32()
		if dropInit && kind == 0 && name == InitExport {
			continue
		}
		out = append(out, m.module[start:r.Pos]...)
		count++
	}
	return count, out
}

// Snapshot is the state of an instance after _initialize: its linear
// memory and its mutable globals' values (as api.Global.Get returns them).
type Snapshot struct {
	Memory  []byte
	Globals map[int]uint64
	Clock   uint64 // ns of monotonic time _initialize ran up to (ClockSection)
}

// Snapshot returns a module that starts where this one is after
// _initialize, given the state s: its memory's minimum is the memory's
// size, its data segments are the memory's non-zero ranges (a gap of up to
// maxGap zeros does not end a range), its mutable globals start at their
// values, and _initialize is no longer exported, so nothing runs it again.
// Everything else (code, tables, element segments, custom sections) is
// kept.
func (m *Reactor) Snapshot(s Snapshot, maxGap int) ([]byte, error) {
	if len(s.Memory)%65536 != 0 {
		return nil, errors.New("memory is not a whole number of pages")
	}
	for _, i := range m.MutableGlobals() {
		if _, ok := s.Globals[i]; !ok {
			return nil, errors.New("snapshot misses global " + strconv.Itoa(i))
		}
	}
	clock := appendU32(nil, uint32(len(ClockSection)))
	clock = append(clock, ClockSection...)
	clock = appendU64(clock, s.Clock)
	return m.rebuild(map[byte]func() []byte{
		sectionMemory: func() []byte {
			b := []byte{1, m.memFlags}
			b = appendU32(b, uint32(len(s.Memory)/65536))
			if m.memFlags&1 != 0 {
				b = appendU32(b, m.memMax)
			}
			return b
		},
		sectionGlobal: func() []byte { return m.globalSection(s.Globals) },
		sectionExport: func() []byte {
			count, body := m.exports(true)
			return append(appendU32(nil, count), body...)
		},
		sectionData: func() []byte { return encodeSegments(nonZero(s.Memory, maxGap)) },
	}, clock), nil
}

func (m *Reactor) globalSection(values map[int]uint64) []byte {
	b := appendU32(nil, uint32(len(m.globals)))
	for i, g := range m.globals {
		mut := byte(0)
		if g.mutable {
			mut = 1
		}
		b = append(b, g.typ, mut)
		if !g.mutable {
			b = append(b, g.init...)
			continue
		}
		v := values[i]
		switch g.typ {
		case typeI32:
			b = appendS32(append(b, opI32Const), int32(uint32(v)))
		case typeI64:
			b = appendS64(append(b, 0x42), int64(v))
		case typeF32:
			b = binary.LittleEndian.AppendUint32(append(b, 0x43), uint32(v))
		case typeF64:
			b = binary.LittleEndian.AppendUint64(append(b, 0x44), v)
		}
		b = append(b, opEnd)
	}
	return b
}

// nonZero returns the non-zero ranges of mem as segments, joining ranges
// separated by at most maxGap zeros.
func nonZero(mem []byte, maxGap int) []segment {
	var segs []segment
	i := 0
	for {
		for i < len(mem) && mem[i] == 0 {
			i++
		}
		if i == len(mem) {
			return segs
		}
		start, end := i, i
		for i < len(mem) {
			if mem[i] != 0 {
				i++
				end = i
				continue
			}
			if i-end > maxGap {
				break
			}
			i++
		}
		segs = append(segs, segment{offset: uint32(start), data: mem[start:end]})
	}
}

// sectionRank orders sections as the binary format requires.
var sectionRank = map[byte]int{
	sectionType: 1, sectionImport: 2, sectionFunction: 3, sectionTable: 4, sectionMemory: 5,
	sectionTag: 6, sectionGlobal: 7, sectionExport: 8, sectionStart: 9, 9: 10,
	sectionDataCount: 11, sectionCode: 12, sectionData: 13,
}

func (m *Reactor) find(id byte) (section, bool) {
	for _, s := range m.sections {
		if s.id == id {
			return s, true
		}
	}
	return section{}, false
}

// rebuild returns the module with the sections in replace rebuilt by their
// functions (inserted where the format puts them if the module has none),
// any earlier ClockSection dropped, and a custom section with content
// custom and the sha256 of all before it appended if custom is not nil.
func (m *Reactor) rebuild(replace map[byte]func() []byte, custom []byte) []byte {
	out := append([]byte(nil), m.module[:8]...)
	done := map[byte]bool{}
	emit := func(id byte, content []byte) {
		out = append(out, id)
		out = appendU32(out, uint32(len(content)))
		out = append(out, content...)
	}
	// insertBefore emits the replaced sections the module lacks that rank
	// before rank.
	insertBefore := func(rank int) {
		for _, id := range []byte{sectionMemory, sectionGlobal, sectionExport, sectionData} {
			if f, ok := replace[id]; ok && !done[id] && sectionRank[id] < rank {
				emit(id, f())
				done[id] = true
			}
		}
	}
	for _, s := range m.sections {
		if s.id == sectionCustom {
			r := &Reader{Buf: m.module[:s.end], Pos: s.content}
			if r.Name() == ClockSection {
				continue
			}
		} else {
			insertBefore(sectionRank[s.id])
		}
		if f, ok := replace[s.id]; ok && !done[s.id] {
			emit(s.id, f())
			done[s.id] = true
			continue
		}
		out = append(out, m.module[s.start:s.end]...)
	}
	insertBefore(1 << 30)
	if custom != nil {
		sum := sha256.Sum256(out)
		emit(sectionCustom, append(custom, sum[:]...))
	}
	return out
}

// Clock returns the ClockSection value of a snapshot, and whether module
// is a whole snapshot: one that ends with a ClockSection whose digest
// matches the bytes before it.
func Clock(module []byte) (uint64, bool) {
	if len(module) < 8 {
		return 0, false
	}
	r := &Reader{Buf: module, Pos: 8}
	for r.Pos < len(module) && r.Err == nil {
		start := r.Pos
		id := r.Byte()
		size := r.U32()
		end := r.Pos + int(size)
		if r.Err != nil || uint64(r.Pos)+uint64(size) > uint64(len(module)) {
			return 0, false
		}
		if end == len(module) && id == sectionCustom {
			cr := &Reader{Buf: module[:end], Pos: r.Pos}
			name, v := cr.Name(), cr.U64()
			sum := sha256.Sum256(module[:start])
			ok := cr.Err == nil && name == ClockSection && end-cr.Pos == len(sum) && bytes.Equal(module[cr.Pos:end], sum[:])
			return v, ok
		}
		r.Pos = end
	}
	return 0, false
}

// U64 reads an unsigned LEB128 u64.
func (r *Reader) U64() uint64 {
	var v uint64
	for shift := 0; shift < 70; shift += 7 {
		c := r.Byte()
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail(errors.New("u64 too long"))
	return 0
}

func appendU64(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendS64(b []byte, x int64) []byte {
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if (x == 0 && c&0x40 == 0) || (x == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
