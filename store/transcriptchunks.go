package store

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/seal"
)

// A cold read's chunks (transcriptread.go) are opened and checked as their rows come,
// and decoded once all have come, so that the counts of all of them size one array each
// of entries, messages, parts and calls: a head read whole then holds its messages in
// one array, with room after them, which a run's model input slices instead of copying
// (loop.SessionHead.Messages).

// chunkView is a chunk whose header, checksum, counts and text are checked; its text is
// a string (a copy of the chunk's: every string field decoded is a slice of it).
type chunkView struct {
	c      counts
	fields []byte
	text   string
}

// viewChunk checks a chunk's header, checksum and text, and that its counts fit its
// fields.
func viewChunk(b []byte) (chunkView, error) {
	c, fields, text, err := chunkParts(b)
	if err != nil {
		return chunkView{}, err
	}
	// Every entry, message, part and call takes bytes of the fields: a count they cannot
	// hold is refused before it sizes an allocation.
	if f := uint64(len(fields)); uint64(c[0])*5 > f || uint64(c[1])*7 > f || uint64(c[2])*8 > f || uint64(c[3])*3 > f {
		return chunkView{}, chunkErr("counts larger than the chunk")
	}
	if !utf8.Valid(text) {
		return chunkView{}, chunkErr("text that is not UTF-8")
	}
	return chunkView{c, fields, string(text)}, nil
}

// newChunkDecoder is a decoder whose messages, parts and calls arrays hold n's counts
// (and spare more messages): the chunks it decodes share them.
func newChunkDecoder(n counts, spare int) *chunkDecoder {
	return &chunkDecoder{
		msgs:  make([]loop.Message, 0, int(n[1])+spare),
		parts: make([]loop.Part, 0, n[2]),
		calls: make([]loop.ToolCall, 0, n[3]),
	}
}

// decode appends the entries of a checked chunk to dst, its messages, parts and calls
// after the decoder's (it must have room for the chunk's counts).
func (d *chunkDecoder) decode(v chunkView, dst []loop.Entry) ([]loop.Entry, error) {
	c := v.c
	m0, p0, c0 := len(d.msgs), len(d.parts), len(d.calls)
	if uint64(cap(d.msgs)-m0) < uint64(c[1]) || uint64(cap(d.parts)-p0) < uint64(c[2]) || uint64(cap(d.calls)-c0) < uint64(c[3]) {
		return dst, chunkErr("counts past the decoder's room")
	}
	d.f, d.off, d.s, d.soff = v.fields, 0, v.text, 0
	d.msgEnd, d.partEnd, d.callEnd = m0+int(c[1]), p0+int(c[2]), c0+int(c[3])
	dst = slices.Grow(dst, int(c[0]))
	for range c[0] {
		dst = dst[:len(dst)+1]
		if err := d.entry(&dst[len(dst)-1]); err != nil {
			return dst[:len(dst)-1], err
		}
	}
	if d.off != len(d.f) || d.soff != len(d.s) || len(d.msgs) != d.msgEnd || len(d.parts) != d.partEnd || len(d.calls) != d.callEnd {
		return dst, chunkErr("counts do not match the entries")
	}
	return dst, nil
}

// openChunkView opens a cold read's chunk row (the want-th, stored under chunk) and
// checks it; why is "" when it can be used, else why not. The view owns its bytes: its
// text is a string anyway, and a plain row's fields are copied (the driver's bytes are
// valid only until the next row).
func openChunkView(keys *seal.Keys, session string, want, chunk int64, stored []byte) (_ chunkView, why string) {
	if chunk != want {
		return chunkView{}, fmt.Sprintf("chunk %d missing", want)
	}
	plain, err := keys.Open(stored, transcriptAAD(session, chunk))
	if err != nil {
		return chunkView{}, fmt.Sprintf("chunk %d: %v", chunk, err)
	}
	v, err := viewChunk(plain)
	if err != nil {
		return chunkView{}, fmt.Sprintf("chunk %d: %v", chunk, err)
	}
	if len(plain) > 0 && len(stored) > 0 && &plain[0] == &stored[0] {
		v.fields = slices.Clone(v.fields)
	}
	return v, ""
}

// decodeViews decodes a read's chunks (the i-th stored under i), in order, checking that
// their seqs keep rising. The entries' messages are msgs, one array with room for spare
// more after them, when no compaction is among the entries (every entry is then a
// message entry, the i-th pointing at msgs[i]); nil otherwise. The entries have room
// for spare more too.
func decodeViews(vs []chunkView, spare int) (tr []loop.Entry, msgs []loop.Message, why string) {
	var total [4]uint64
	for _, v := range vs {
		for i := range total {
			total[i] += uint64(v.c[i])
		}
	}
	var n counts
	for i := range total {
		if total[i] > 1<<31 {
			return nil, nil, "chunks counting too many entries"
		}
		n[i] = uint32(total[i])
	}
	d := newChunkDecoder(n, spare)
	tr = make([]loop.Entry, 0, int(n[0])+spare)
	for i, v := range vs {
		k := len(tr)
		var err error
		if tr, err = d.decode(v, tr); err != nil {
			return nil, nil, fmt.Sprintf("chunk %d: %v", i, err)
		}
		for j := max(k, 1); j < len(tr); j++ {
			if tr[j].Seq <= tr[j-1].Seq {
				return nil, nil, fmt.Sprintf("chunk %d: entries out of order", i)
			}
		}
	}
	if !d.compacted && len(d.msgs) == len(tr) {
		msgs = d.msgs
	}
	return tr, msgs, ""
}
