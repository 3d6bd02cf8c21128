package wasmbin

import (
	"bytes"
	"slices"
)

// maxSegments bounds the work and memory MergeData spends on one module (about 50
// bytes a segment): a Go program of 3.5 MB has 37,436; a module with more is
// compiled as it is.
const maxSegments = 1 << 20

const (
	sectionData      = 11
	sectionDataCount = 12

	opI32Const = 0x41
	opEnd      = 0x0b
)

// MergeData returns module with its active data segments merged wherever the
// gap between one segment's end and the next one's start is at most maxGap
// bytes, and how many segments there were and are. When the module is not
// one it may rewrite, or nothing would merge, it returns module itself.
func MergeData(module []byte, maxGap int) (out []byte, before, after int) {
	if len(module) < 8 || !bytes.Equal(module[:4], []byte("\x00asm")) {
		return module, 0, 0
	}
	r := &Reader{Buf: module, Pos: 8}
	dataStart, dataEnd, contentStart := -1, -1, -1
	for r.Pos < len(module) {
		start := r.Pos
		id := r.Byte()
		size := r.U32()
		if r.Err != nil || uint64(r.Pos)+uint64(size) > uint64(len(module)) {
			return module, 0, 0
		}
		switch id {
		case sectionDataCount:
			return module, 0, 0
		case sectionData:
			dataStart, contentStart, dataEnd = start, r.Pos, r.Pos+int(size)
		}
		r.Pos += int(size)
	}
	if dataStart < 0 {
		return module, 0, 0
	}
	segs, ok := parseSegments(module[contentStart:dataEnd])
	if !ok {
		return module, 0, 0
	}
	next, ok := neighbours(segs)
	if !ok {
		return module, 0, 0
	}
	merged := mergeSegments(segs, next, uint64(maxGap))
	if len(merged) == len(segs) || grown(segs, merged) > contentLen(segs) {
		// Nothing to gain, or the zeros would more than double the data: a
		// module of many tiny segments far apart must not make Load
		// allocate many times its size.
		return module, len(segs), len(segs)
	}
	content := encodeSegments(merged)
	out = make([]byte, 0, dataStart+len(content)+16+len(module)-dataEnd)
	out = append(out, module[:dataStart]...)
	out = append(out, sectionData)
	out = appendU32(out, uint32(len(content)))
	out = append(out, content...)
	out = append(out, module[dataEnd:]...)
	return out, len(segs), len(merged)
}

// segment is an active data segment of memory 0: data at offset. A merged
// segment's data is its parts with zeros between them.
type segment struct {
	offset uint32
	data   []byte
}

func (s segment) end() uint64 { return uint64(s.offset) + uint64(len(s.data)) }

// parseSegments reads a data section's content, or says it is not one
// MergeData may rewrite.
func parseSegments(b []byte) ([]segment, bool) {
	r := &Reader{Buf: b}
	n := r.U32()
	if r.Err != nil || uint64(n) > uint64(len(b)) || n > maxSegments { // every segment takes bytes
		return nil, false
	}
	segs := make([]segment, 0, n)
	for range n {
		if r.U32() != 0 || r.Byte() != opI32Const { // flags 0: active, memory 0
			return nil, false
		}
		offset := uint32(r.S32())
		if r.Byte() != opEnd {
			return nil, false
		}
		size := r.U32()
		if r.Err != nil || uint64(r.Pos)+uint64(size) > uint64(len(b)) {
			return nil, false
		}
		s := segment{offset: offset, data: b[r.Pos : r.Pos+int(size)]}
		r.Pos += int(size)
		if s.end() > 1<<32 {
			return nil, false // past any memory: let instantiation say so
		}
		segs = append(segs, s)
	}
	if r.Err != nil || r.Pos != len(b) {
		return nil, false
	}
	return segs, true
}

// neighbours reports, for each segment but the last, whether the next one
// in the section is also the next one in memory, with nothing between
// them; it returns false if any two segments overlap (then a segment's
// bytes depend on the order they are written in, and MergeData keeps out).
// Go writes a few ascending runs, one per kind of data, not one.
func neighbours(segs []segment) ([]bool, bool) {
	order := make([]int, len(segs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(int64(segs[a].offset) - int64(segs[b].offset)) })
	rank := make([]int, len(segs))
	for r, i := range order {
		rank[i] = r
		if r > 0 && segs[order[r-1]].end() > uint64(segs[i].offset) {
			return nil, false
		}
	}
	next := make([]bool, len(segs))
	for i := 0; i+1 < len(segs); i++ {
		next[i] = rank[i+1] == rank[i]+1
	}
	return next, true
}

// mergeSegments joins each run of segments that follow one another in the
// section and in memory with gaps of at most maxGap. The gaps hold no other
// segment's bytes (neighbours), so writing zeros there changes nothing.
func mergeSegments(segs []segment, next []bool, maxGap uint64) []segment {
	var out []segment
	for i := 0; i < len(segs); {
		j := i + 1
		for j < len(segs) && next[j-1] && uint64(segs[j].offset)-segs[j-1].end() <= maxGap {
			j++
		}
		if j == i+1 {
			out = append(out, segs[i])
		} else {
			data := make([]byte, segs[j-1].end()-uint64(segs[i].offset))
			for _, s := range segs[i:j] {
				copy(data[s.offset-segs[i].offset:], s.data)
			}
			out = append(out, segment{offset: segs[i].offset, data: data})
		}
		i = j
	}
	return out
}

func contentLen(segs []segment) (n uint64) {
	for _, s := range segs {
		n += uint64(len(s.data))
	}
	return n
}

// grown is how many zero bytes a merge writes out.
func grown(before, after []segment) uint64 { return contentLen(after) - contentLen(before) }

func encodeSegments(segs []segment) []byte {
	size := 5
	for _, s := range segs {
		size += 12 + len(s.data)
	}
	b := make([]byte, 0, size)
	b = appendU32(b, uint32(len(segs)))
	for _, s := range segs {
		b = append(b, 0, opI32Const)
		b = appendS32(b, int32(s.offset))
		b = append(b, opEnd)
		b = appendU32(b, uint32(len(s.data)))
		b = append(b, s.data...)
	}
	return b
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendS32(b []byte, v int32) []byte {
	x := int64(v)
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if (x == 0 && c&0x40 == 0) || (x == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
