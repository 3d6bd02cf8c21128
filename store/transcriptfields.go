package store

import (
	"encoding/binary"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/loop"
)

// entryShape reports whether every string of a transcript entry is valid UTF-8, and how
// many bytes its projection's fields and text take about (to size them once).
func entryShape(e *loop.Entry) (ok bool, fields, text int) {
	ok, fields = true, 32
	str := func(ss ...string) {
		for _, s := range ss {
			ok = ok && utf8.ValidString(s)
			fields, text = fields+2, text+len(s)
		}
	}
	str(e.RunID, string(e.Kind))
	msg := func(m *loop.Message) {
		str(string(m.Role), m.ToolCallID, m.Name, m.Reasoning, m.ReasoningState)
		fields += 4
		for _, p := range m.Content {
			str(string(p.Type), p.Text, p.URL, p.MimeType, p.Attachment, p.Name)
			fields += 12 + len(p.Data)
		}
		for _, c := range m.ToolCalls {
			str(c.ID, c.Name, c.Arguments)
		}
	}
	if e.Message != nil {
		msg(e.Message)
	}
	if e.Compaction != nil {
		fields += 12
		for i := range e.Compaction.Summary {
			msg(&e.Compaction.Summary[i])
		}
	}
	return ok, fields, text
}

// time encodes an entry's time as what its JSON's text (RFC 3339, to the minute of its
// zone offset) parses to: the instant, and "Z" or the offset written. Decoding does what
// time.Parse does with it (decoder.time), so no text is parsed at a run's start.
func (p *encodedEntry) time(t time.Time) error {
	if _, off := t.Zone(); off == 0 { // written "Z": the instant, to the nanosecond
		p.fields = binary.AppendVarint(p.fields, t.Unix())
		p.fields = append(binary.AppendUvarint(p.fields, uint64(t.Nanosecond())), 0)
		return nil
	}
	text := t.Format(time.RFC3339Nano)
	parsed, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return err
	}
	p.fields = binary.AppendVarint(p.fields, parsed.Unix())
	p.fields = binary.AppendUvarint(p.fields, uint64(parsed.Nanosecond()))
	if strings.HasSuffix(text, "Z") {
		p.fields = append(p.fields, 0)
		return nil
	}
	_, off := parsed.Zone()
	p.fields = binary.AppendVarint(append(p.fields, 1), int64(off))
	return nil
}

// time is time.Parse's result for the text the fields stand for: UTC for "Z"; else the
// local zone if its offset at that instant is the one written, else a fixed zone.
func (d *chunkDecoder) time() time.Time {
	sec, nsec := d.varint(), d.uvarint()
	if d.off >= len(d.f) || nsec >= 1e9 {
		d.fail("bad time")
		return time.Time{}
	}
	zone := d.f[d.off]
	d.off++
	t := time.Unix(sec, int64(nsec))
	switch zone {
	case 0:
		return t.UTC()
	case 1:
		off := d.varint()
		if off <= -86400 || off >= 86400 {
			break
		}
		if _, local := t.Zone(); int64(local) == off {
			return t
		}
		return t.In(time.FixedZone("", int(off)))
	}
	d.fail("bad time zone")
	return time.Time{}
}
