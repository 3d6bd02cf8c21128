package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/loop"
)

// The transcript projection's encoding (transcript.go). A chunk holds transcript
// entries (messages and compactions) in seq order, each field length-prefixed, so a run's
// start decodes it without JSON: the strings are sliced from one string made of the
// chunk, and the messages, parts and tool calls of a chunk are three allocations, sized by
// the counts in its header. Layout:
//
//	"AHT1" | crc32c of the rest (4, little endian) | entries, messages, parts, calls (4 × 4)
//	then each entry: uvarint seq | str run id | str time (RFC 3339, as JSON has it) |
//	str kind | flags (1: message, 2: compaction) | message | compaction
//	message: str role | uvarint parts | parts | uvarint calls | calls |
//	str tool call id | str name | str reasoning | str reasoning state
//	part: str type, text, url, mime type, attachment, name | varint size | str data
//	call: str id, name, arguments
//	compaction: varint replace | uvarint summary messages + 1 (0: none) | messages
//
// where str is a uvarint length and the bytes. What a chunk decodes to is exactly what
// the entries' JSON decodes to (projectEntry makes it so; FuzzTranscriptChunk checks).

const (
	chunkMagic  = "AHT1"
	chunkHeader = 4 + 4 + 16
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

// projectEntry encodes one transcript entry as the chunk holds it. An entry whose strings
// are not valid UTF-8 is first made what its JSON decodes to (the codec replaces invalid
// bytes), so the projection never differs from the entries.
func projectEntry(e loop.Entry) ([]byte, error) {
	if e.Event != nil {
		return nil, fmt.Errorf("entry %d: a %s entry with an event is not projected", e.Seq, e.Kind)
	}
	if !entryUTF8(&e) {
		body, err := marshalEntry(e)
		if err != nil {
			return nil, err
		}
		at := e.Time // formatted below as its JSON has it; the decoded one formats differently
		if e, err = decodeEntry(e.Seq, body); err != nil {
			return nil, err
		}
		e.Time = at
	}
	var b []byte
	b = binary.AppendUvarint(b, uint64(e.Seq))
	b = appendStr(b, e.RunID)
	b = appendStr(b, e.Time.Format(time.RFC3339Nano))
	b = appendStr(b, string(e.Kind))
	var flags byte
	if e.Message != nil {
		flags |= flagMessage
	}
	if e.Compaction != nil {
		flags |= flagCompact
	}
	b = append(b, flags)
	if e.Message != nil {
		b = appendMessage(b, e.Message)
	}
	if c := e.Compaction; c != nil {
		b = binary.AppendVarint(b, int64(c.Replace))
		if c.Summary == nil {
			b = append(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(c.Summary))+1)
		}
		for i := range c.Summary {
			b = appendMessage(b, &c.Summary[i])
		}
	}
	return b, nil
}

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendMessage(b []byte, m *loop.Message) []byte {
	b = appendStr(b, string(m.Role))
	b = binary.AppendUvarint(b, uint64(len(m.Content)))
	for _, p := range m.Content {
		for _, s := range [...]string{string(p.Type), p.Text, p.URL, p.MimeType, p.Attachment, p.Name} {
			b = appendStr(b, s)
		}
		b = binary.AppendVarint(b, p.Size)
		b = appendStr(b, string(p.Data))
	}
	b = binary.AppendUvarint(b, uint64(len(m.ToolCalls)))
	for _, c := range m.ToolCalls {
		b = appendStr(appendStr(appendStr(b, c.ID), c.Name), c.Arguments)
	}
	for _, s := range [...]string{m.ToolCallID, m.Name, m.Reasoning, m.ReasoningState} {
		b = appendStr(b, s)
	}
	return b
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

// appendChunk is chunk (nil for a new one) with the projected entries added: their
// encodings (projectEntry) and their counts.
func appendChunk(chunk []byte, add []byte, n counts) ([]byte, error) {
	var c counts
	if chunk != nil {
		if len(chunk) < chunkHeader || string(chunk[:4]) != chunkMagic {
			return nil, chunkErr("no header")
		}
		for i := range c {
			c[i] = binary.LittleEndian.Uint32(chunk[8+4*i:])
		}
	}
	out := make([]byte, chunkHeader, max(len(chunk), chunkHeader)+len(add))
	copy(out, chunkMagic)
	for i := range c {
		binary.LittleEndian.PutUint32(out[8+4*i:], c[i]+n[i])
	}
	if chunk != nil {
		out = append(out, chunk[chunkHeader:]...)
	}
	out = append(out, add...)
	binary.LittleEndian.PutUint32(out[4:], crc32.Checksum(out[8:], crcTable))
	return out, nil
}

// decodeChunk appends the entries of a chunk to dst, in order.
func decodeChunk(b []byte, dst []loop.Entry) ([]loop.Entry, error) {
	if len(b) < chunkHeader || string(b[:4]) != chunkMagic {
		return dst, chunkErr("no header")
	}
	if crc32.Checksum(b[8:], crcTable) != binary.LittleEndian.Uint32(b[4:]) {
		return dst, chunkErr("checksum mismatch")
	}
	var c counts
	for i := range c {
		c[i] = binary.LittleEndian.Uint32(b[8+4*i:])
	}
	// Every entry, message, part and call takes bytes: a count the chunk cannot hold is
	// refused before it sizes an allocation.
	if rest := uint64(len(b) - chunkHeader); uint64(c[0])*5 > rest || uint64(c[1]) > rest || uint64(c[2])*7 > rest || uint64(c[3])*3 > rest {
		return dst, chunkErr("counts larger than the chunk")
	}
	d := chunkDecoder{s: string(b[chunkHeader:])}
	d.msgs = make([]loop.Message, 0, c[1])
	d.parts = make([]loop.Part, 0, c[2])
	d.calls = make([]loop.ToolCall, 0, c[3])
	if cap(dst)-len(dst) < int(c[0]) {
		dst = append(make([]loop.Entry, 0, len(dst)+int(c[0])), dst...)
	}
	for range c[0] {
		e, err := d.entry()
		if err != nil {
			return dst, err
		}
		dst = append(dst, e)
	}
	if d.off != len(d.s) || len(d.msgs) != int(c[1]) || len(d.parts) != int(c[2]) || len(d.calls) != int(c[3]) {
		return dst, chunkErr("counts do not match the entries")
	}
	return dst, nil
}

type chunkDecoder struct {
	s     string // the chunk after its header: every string is a slice of it
	off   int
	err   error
	msgs  []loop.Message
	parts []loop.Part
	calls []loop.ToolCall
}

func (d *chunkDecoder) fail(what string) {
	if d.err == nil {
		d.err = chunkErr("%s at byte %d", what, chunkHeader+d.off)
	}
}

func (d *chunkDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	if d.off < len(d.s) && d.s[d.off] < 0x80 { // the common case: one byte
		d.off++
		return uint64(d.s[d.off-1])
	}
	var x uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64 && d.off < len(d.s); i++ {
		c := d.s[d.off]
		d.off++
		if c < 0x80 {
			return x | uint64(c)<<s
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	d.fail("bad varint")
	return 0
}

func (d *chunkDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// bytes is the next length-prefixed field, unchecked.
func (d *chunkDecoder) bytes() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.s)-d.off) {
		d.fail("length past the end")
		return ""
	}
	s := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

// str is the next string field, which must be UTF-8 (as every string JSON decodes to).
func (d *chunkDecoder) str() string {
	s := d.bytes()
	if !utf8.ValidString(s) {
		d.fail("a string that is not UTF-8")
		return ""
	}
	return s
}

func (d *chunkDecoder) entry() (loop.Entry, error) {
	var e loop.Entry
	e.Seq = int64(d.uvarint())
	e.RunID = d.str()
	ts := d.str()
	e.Kind = loop.EntryKind(d.str())
	var flags byte
	if d.off < len(d.s) {
		flags = d.s[d.off]
		d.off++
	} else {
		d.fail("truncated")
	}
	if d.err == nil {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			d.fail("bad time")
		}
		e.Time = t
	}
	if flags&flagMessage != 0 {
		e.Message = d.message()
	}
	if flags&flagCompact != 0 {
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
	bad := flags&^(flagMessage|flagCompact) != 0 || !isTranscript(&e) || e.Seq <= 0 ||
		e.Kind == loop.EntryMessage && e.Message == nil || e.Kind == loop.EntryCompaction && e.Compaction == nil
	if d.err == nil && bad {
		d.fail("not a transcript entry")
	}
	return e, d.err
}

// message decodes a message into the chunk's next slot of msgs.
func (d *chunkDecoder) message() *loop.Message {
	if d.err != nil {
		return nil
	}
	if len(d.msgs) == cap(d.msgs) {
		d.fail("more messages than counted")
		return nil
	}
	d.msgs = d.msgs[:len(d.msgs)+1]
	m := &d.msgs[len(d.msgs)-1]
	m.Role = loop.Role(d.str())
	if n := d.uvarint(); n > 0 {
		start := len(d.parts)
		if n > uint64(cap(d.parts)-start) {
			d.fail("more parts than counted")
			return nil
		}
		for range n {
			d.parts = d.parts[:len(d.parts)+1]
			p := &d.parts[len(d.parts)-1]
			p.Type, p.Text, p.URL = loop.PartType(d.str()), d.str(), d.str()
			p.MimeType, p.Attachment, p.Name = d.str(), d.str(), d.str()
			p.Size = d.varint()
			if data := d.bytes(); data != "" {
				p.Data = []byte(data)
			}
		}
		m.Content = d.parts[start:len(d.parts):len(d.parts)]
	}
	if n := d.uvarint(); n > 0 {
		start := len(d.calls)
		if n > uint64(cap(d.calls)-start) {
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

// entryUTF8 reports whether every string of a transcript entry is valid UTF-8.
func entryUTF8(e *loop.Entry) bool {
	ok := utf8.ValidString(e.RunID) && utf8.ValidString(string(e.Kind))
	msg := func(m *loop.Message) {
		ok = ok && utf8.ValidString(string(m.Role)) && utf8.ValidString(m.ToolCallID) && utf8.ValidString(m.Name) &&
			utf8.ValidString(m.Reasoning) && utf8.ValidString(m.ReasoningState)
		for _, p := range m.Content {
			ok = ok && utf8.ValidString(string(p.Type)) && utf8.ValidString(p.Text) && utf8.ValidString(p.URL) &&
				utf8.ValidString(p.MimeType) && utf8.ValidString(p.Attachment) && utf8.ValidString(p.Name)
		}
		for _, c := range m.ToolCalls {
			ok = ok && utf8.ValidString(c.ID) && utf8.ValidString(c.Name) && utf8.ValidString(c.Arguments)
		}
	}
	if e.Message != nil {
		msg(e.Message)
	}
	if e.Compaction != nil {
		for i := range e.Compaction.Summary {
			msg(&e.Compaction.Summary[i])
		}
	}
	return ok
}
