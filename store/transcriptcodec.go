package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"unicode/utf8"

	"github.com/agenthost/agenthost/loop"
)

// The transcript projection's encoding (transcript.go). A chunk holds transcript
// entries (messages and compactions) in seq order, so a run's start decodes them without
// JSON: the fields are length-prefixed in one region, the strings' bytes follow one
// another in a second (the text), which is checked as UTF-8 once and made one string that
// every string field is a slice of; the messages, parts and tool calls of a chunk are
// three allocations, sized by the counts in its header. Layout:
//
//	"AHT1" | crc32c of the rest (4, little endian) |
//	entries, messages, parts, calls, length of the fields (5 × 4) | fields | text
//	each entry's fields: uvarint seq | s run id | time | s kind |
//	flags (1: message, 2: compaction) | message | compaction
//	time: varint unix seconds | uvarint nanoseconds | 0 (a "Z" time), or 1 and varint
//	offset seconds: the time its JSON's RFC 3339 text parses to (see appendTime)
//	message: s role | uvarint parts | parts | uvarint calls | calls |
//	s tool call id | s name | s reasoning | s reasoning state
//	part: s type, text, url, mime type, attachment, name | varint size | uvarint n, n bytes of data
//	call: s id, name, arguments
//	compaction: varint replace | uvarint summary messages + 1 (0: none) | messages
//
// where s is a uvarint length in the fields and that many bytes of the text. Every
// string starts on a rune (checked), so the text being UTF-8 makes each string UTF-8.
// What a chunk decodes to is exactly what the entries' JSON decodes to (projectEntry
// makes it so; FuzzTranscriptChunk checks).

const (
	chunkMagic  = "AHT1"
	chunkHeader = 4 + 4 + 20
	flagMessage = 1
	flagCompact = 2
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errChunk is a chunk that does not decode: truncated, a bad length or count, a bad
// checksum, a string that is not UTF-8.
var errChunk = errors.New("transcript chunk is corrupt")

func chunkErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errChunk, fmt.Sprintf(format, args...))
}

// isTranscript reports whether an entry belongs to the projection (loop.HeadOf's rule).
func isTranscript(e *loop.Entry) bool {
	return e.Kind == loop.EntryMessage || e.Kind == loop.EntryCompaction
}

// encodedEntry is an entry's fields and text.
type encodedEntry struct{ fields, text []byte }

func (p *encodedEntry) str(s string) {
	p.fields = binary.AppendUvarint(p.fields, uint64(len(s)))
	p.text = append(p.text, s...)
}

// projectEntry encodes one transcript entry as the chunk holds it. An entry whose strings
// are not valid UTF-8 is first made what its JSON decodes to (the codec replaces invalid
// bytes), so the projection never differs from the entries.
func projectEntry(e loop.Entry) (encodedEntry, error) {
	var p encodedEntry
	if e.Event != nil {
		return p, fmt.Errorf("entry %d: a %s entry with an event is not projected", e.Seq, e.Kind)
	}
	ok, nf, nt := entryShape(&e)
	if !ok {
		body, err := marshalEntry(e)
		if err != nil {
			return p, err
		}
		at := e.Time // formatted below as its JSON has it; the decoded one formats differently
		if e, err = decodeEntry(e.Seq, body); err != nil {
			return p, err
		}
		e.Time = at
	}
	buf := make([]byte, 0, nf+nt) // fields, then text: one allocation
	p.fields, p.text = buf[:0:nf], buf[nf:nf]
	p.fields = binary.AppendUvarint(p.fields, uint64(e.Seq))
	p.str(e.RunID)
	if err := p.time(e.Time); err != nil {
		return p, fmt.Errorf("entry %d: %w", e.Seq, err)
	}
	p.str(string(e.Kind))
	var flags byte
	if e.Message != nil {
		flags |= flagMessage
	}
	if e.Compaction != nil {
		flags |= flagCompact
	}
	p.fields = append(p.fields, flags)
	if e.Message != nil {
		p.message(e.Message)
	}
	if c := e.Compaction; c != nil {
		p.fields = binary.AppendVarint(p.fields, int64(c.Replace))
		if c.Summary == nil {
			p.fields = append(p.fields, 0)
		} else {
			p.fields = binary.AppendUvarint(p.fields, uint64(len(c.Summary))+1)
		}
		for i := range c.Summary {
			p.message(&c.Summary[i])
		}
	}
	return p, nil
}

func (p *encodedEntry) message(m *loop.Message) {
	p.str(string(m.Role))
	p.fields = binary.AppendUvarint(p.fields, uint64(len(m.Content)))
	for _, pt := range m.Content {
		for _, s := range [...]string{string(pt.Type), pt.Text, pt.URL, pt.MimeType, pt.Attachment, pt.Name} {
			p.str(s)
		}
		p.fields = binary.AppendVarint(p.fields, pt.Size)
		p.fields = append(binary.AppendUvarint(p.fields, uint64(len(pt.Data))), pt.Data...)
	}
	p.fields = binary.AppendUvarint(p.fields, uint64(len(m.ToolCalls)))
	for _, c := range m.ToolCalls {
		p.str(c.ID)
		p.str(c.Name)
		p.str(c.Arguments)
	}
	for _, s := range [...]string{m.ToolCallID, m.Name, m.Reasoning, m.ReasoningState} {
		p.str(s)
	}
}

// counts are a chunk's header counts.
type counts [4]uint32 // entries, messages, parts, calls

func countOf(e *loop.Entry) counts {
	var c counts
	c[0] = 1
	add := func(m *loop.Message) {
		c[1]++
		c[2] += uint32(len(m.Content))
		c[3] += uint32(len(m.ToolCalls))
	}
	if e.Message != nil {
		add(e.Message)
	}
	if e.Compaction != nil {
		for i := range e.Compaction.Summary {
			add(&e.Compaction.Summary[i])
		}
	}
	return c
}

// chunkParts splits a chunk into its counts, fields and text, checking its header and
// checksum.
func chunkParts(b []byte) (c counts, fields, text []byte, err error) {
	if len(b) < chunkHeader || string(b[:4]) != chunkMagic {
		return c, nil, nil, chunkErr("no header")
	}
	if crc32.Checksum(b[8:], crcTable) != binary.LittleEndian.Uint32(b[4:]) {
		return c, nil, nil, chunkErr("checksum mismatch")
	}
	for i := range c {
		c[i] = binary.LittleEndian.Uint32(b[8+4*i:])
	}
	n := binary.LittleEndian.Uint32(b[24:])
	if uint64(n) > uint64(len(b)-chunkHeader) {
		return c, nil, nil, chunkErr("fields past the end")
	}
	return c, b[chunkHeader : chunkHeader+int(n)], b[chunkHeader+int(n):], nil
}

// appendChunk is chunk (nil for a new one) with entries added: their fields and text
// (projectEntry's, concatenated) and counts.
func appendChunk(chunk []byte, add encodedEntry, n counts) ([]byte, error) {
	var c counts
	var fields, text []byte
	if chunk != nil {
		var err error
		if c, fields, text, err = chunkParts(chunk); err != nil {
			return nil, err
		}
	}
	out := make([]byte, chunkHeader, chunkHeader+len(fields)+len(text)+len(add.fields)+len(add.text))
	copy(out, chunkMagic)
	for i := range c {
		binary.LittleEndian.PutUint32(out[8+4*i:], c[i]+n[i])
	}
	binary.LittleEndian.PutUint32(out[24:], uint32(len(fields)+len(add.fields)))
	out = append(append(append(append(out, fields...), add.fields...), text...), add.text...)
	binary.LittleEndian.PutUint32(out[4:], crc32.Checksum(out[8:], crcTable))
	return out, nil
}

// decodeChunk appends the entries of a chunk to dst, in order. The entries share the
// chunk's allocations: the caller must not change them.
func decodeChunk(b []byte, dst []loop.Entry) ([]loop.Entry, error) {
	v, err := viewChunk(b)
	if err != nil {
		return dst, err
	}
	d := newChunkDecoder(v.c, 0)
	return d.decode(v, dst)
}

type chunkDecoder struct {
	f     []byte // the fields
	off   int
	s     string // the text: every string is a slice of it
	soff  int
	err   error
	msgs  []loop.Message
	parts []loop.Part
	calls []loop.ToolCall
	// where the chunk being decoded ends in msgs, parts and calls (the arrays may hold
	// more chunks after it, and room past them)
	msgEnd, partEnd, callEnd int
	compacted                bool // a compaction was decoded: msgs holds its summary
}

func (d *chunkDecoder) fail(what string) {
	if d.err == nil {
		d.err = chunkErr("%s at byte %d of the fields", what, d.off)
	}
}

func (d *chunkDecoder) uvarint() uint64 {
	if off := d.off; off < len(d.f) && d.f[off] < 0x80 { // the common case, inlined: one byte
		d.off = off + 1
		return uint64(d.f[off])
	}
	return d.uvarintLong()
}

func (d *chunkDecoder) uvarintLong() uint64 {
	x, n := binary.Uvarint(d.f[min(d.off, len(d.f)):])
	if n <= 0 {
		d.fail("bad varint")
		d.off = len(d.f)
		return 0
	}
	d.off += n
	return x
}

func (d *chunkDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// str is the next string: a slice of the text, starting on a rune.
func (d *chunkDecoder) str() string {
	n := d.uvarint()
	if n == 0 {
		return ""
	}
	if n > uint64(len(d.s)-d.soff) || !utf8.RuneStart(d.s[d.soff]) {
		d.fail("a bad string length")
		return ""
	}
	s := d.s[d.soff : d.soff+int(n)]
	d.soff += int(n)
	return s
}

func (d *chunkDecoder) entry(e *loop.Entry) error {
	e.Seq = int64(d.uvarint())
	e.RunID = d.str()
	e.Time = d.time()
	e.Kind = loop.EntryKind(d.str())
	var flags byte
	if d.off < len(d.f) {
		flags = d.f[d.off]
		d.off++
	} else {
		d.fail("truncated")
	}
	if flags&flagMessage != 0 {
		e.Message = d.message()
	}
	if flags&flagCompact != 0 {
		d.compacted = true
		c := &loop.Compaction{Replace: int(d.varint())}
		if n := d.uvarint(); n > 0 {
			start := len(d.msgs)
			for i := uint64(1); i < n && d.err == nil; i++ {
				d.message() // fails once the messages counted are used up
			}
			if d.err == nil {
				c.Summary = d.msgs[start:len(d.msgs):len(d.msgs)]
			}
		}
		e.Compaction = c
	}
	bad := flags&^(flagMessage|flagCompact) != 0 || !isTranscript(e) || e.Seq <= 0 ||
		e.Kind == loop.EntryMessage && e.Message == nil || e.Kind == loop.EntryCompaction && e.Compaction == nil
	if d.err == nil && bad {
		d.fail("not a transcript entry")
	}
	return d.err
}

// message decodes a message into the chunk's next slot of msgs.
func (d *chunkDecoder) message() *loop.Message {
	if d.err != nil {
		return nil
	}
	if len(d.msgs) >= d.msgEnd {
		d.fail("more messages than counted")
		return nil
	}
	d.msgs = d.msgs[:len(d.msgs)+1]
	m := &d.msgs[len(d.msgs)-1]
	m.Role = loop.Role(d.str())
	if n := d.uvarint(); n > 0 {
		start := len(d.parts)
		if n > uint64(d.partEnd-start) {
			d.fail("more parts than counted")
			return nil
		}
		for range n {
			d.parts = d.parts[:len(d.parts)+1]
			p := &d.parts[len(d.parts)-1]
			p.Type, p.Text, p.URL = loop.PartType(d.str()), d.str(), d.str()
			p.MimeType, p.Attachment, p.Name = d.str(), d.str(), d.str()
			p.Size = d.varint()
			if n := d.uvarint(); n > 0 && d.err == nil {
				if n > uint64(len(d.f)-d.off) {
					d.fail("data past the end")
					return nil
				}
				p.Data = bytes.Clone(d.f[d.off : d.off+int(n)])
				d.off += int(n)
			}
		}
		m.Content = d.parts[start:len(d.parts):len(d.parts)]
	}
	if n := d.uvarint(); n > 0 {
		start := len(d.calls)
		if n > uint64(d.callEnd-start) {
			d.fail("more tool calls than counted")
			return nil
		}
		for range n {
			d.calls = append(d.calls, loop.ToolCall{ID: d.str(), Name: d.str(), Arguments: d.str()})
		}
		m.ToolCalls = d.calls[start:len(d.calls):len(d.calls)]
	}
	m.ToolCallID, m.Name, m.Reasoning, m.ReasoningState = d.str(), d.str(), d.str(), d.str()
	return m
}
