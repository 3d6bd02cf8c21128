package store

import (
	"encoding/binary"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/loop"
)

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

// time encodes an entry's time as what its JSON's text (RFC 3339, to the minute of its
// zone offset) parses to: the instant, and "Z" or the offset written. Decoding does what
// time.Parse does with it (decoder.time), so no text is parsed at a run's start.
func (p *encodedEntry) time(t time.Time) error {
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
