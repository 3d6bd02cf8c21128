package redact

import "unicode/utf8"

// StreamWindow bounds what a Stream holds back, in bytes of normal text. A built-in
// match is at most this long in practice (an e-mail address has at most 254 bytes, a
// card, IBAN or phone number under 70); text is held back while a match may still be
// forming, and a run of such text longer than twice this is let go in pieces of this.
// With patterns of the manifest's own, whose shape is not known, the last StreamWindow
// bytes are always held back: a pattern's match up to this long is caught in a stream.
const StreamWindow = 256

// Stream redacts text that arrives in pieces (a model's answer as it streams): Write
// takes a piece and returns the redacted text that is now safe to send, holding back
// the tail where a detector may still match once more text comes; Flush returns the
// rest. What it returns, in order, is what Redact returns for the whole text (for
// matches up to StreamWindow bytes): no piece carries part of a match, and no match is
// missed because it was split across pieces. A Stream is used by one goroutine.
type Stream struct {
	r       *Redactor
	pending string
	counts  map[string]int
}

// Stream starts redacting a text that arrives in pieces.
func (r *Redactor) Stream() *Stream { return &Stream{r: r, counts: map[string]int{}} }

// Write adds a piece and returns what can be sent of the text so far, redacted.
func (s *Stream) Write(piece string) string {
	s.pending += piece
	t := normalize(s.pending)
	h, spans := s.cut(t)
	if h == 0 {
		return ""
	}
	out := t.replace(s.pending, spans, h, s.counts)
	s.pending = s.pending[t.origStart(h):]
	return out
}

// Flush returns the rest of the text, redacted; the Stream is then empty.
func (s *Stream) Flush() string {
	if s.pending == "" {
		return ""
	}
	t := normalize(s.pending)
	out := t.replace(s.pending, s.r.find(t.s), len(t.s), s.counts)
	s.pending = ""
	return out
}

// Counts are the matches redacted so far, by kind.
func (s *Stream) Counts() map[string]int { return s.counts }

// cut is how much of normal text t can be sent, up to a position no match can span
// whatever text comes next, and the matches before it.
func (s *Stream) cut(t normText) (int, []span) {
	n := t.s
	end := len(n) - incompleteTail(n) // a rune split across pieces is not known yet
	h := safeBefore(n, end, end)
	forced := false
	if s.r.custom {
		h, forced = safeBefore(n, min(h, max(0, len(n)-StreamWindow)), end), true
	}
	if len(n)-h > 2*StreamWindow { // longer than any match: let it go
		h, forced = len(n)-StreamWindow, true
	}
	if !forced {
		// A cut is also where a rune and a span of the original begin; no match spans a
		// safe cut, so the matches before it are those of the text before it: the
		// detectors run only when there is something to send.
		for {
			for h > 0 && !t.boundary(h) {
				h--
			}
			if safe := safeBefore(n, h, end); safe != h {
				h = safe
				continue
			}
			break
		}
		if h == 0 {
			return 0, nil
		}
		return h, s.r.find(n[:h])
	}
	spans := s.r.find(n)
	for moved := true; moved && h > 0; {
		moved = false
		for _, sp := range spans {
			if sp.start < h && h < sp.end {
				h, moved = sp.start, true
			}
		}
		for h > 0 && !t.boundary(h) {
			h, moved = h-1, true
		}
	}
	return h, spans
}

// safeBefore is the last cut at or before limit that no built-in match can span. A
// match of an e-mail address or a key is one run of word characters (inWord); a card,
// IBAN or phone number one run of digits, capitals, single spaces and + . ( ) -
// (inNumber). So a cut is safe where the bytes on either side are not both of one
// class; at end, the next byte is not known, and the byte before must be of neither.
func safeBefore(n string, limit, end int) int {
	for h := limit; h > 0; h-- {
		a := n[h-1]
		if h >= end {
			if !inWord(a) && !inNumber(a) {
				return h
			}
			continue
		}
		b := n[h]
		if !(inWord(a) && inWord(b)) && !(inNumber(a) && inNumber(b)) {
			return h
		}
	}
	return 0
}

func inWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '%' || c == '+' || c == '-' || c == '@'
}

func inNumber(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' ||
		c == ' ' || c == '+' || c == '.' || c == '(' || c == ')' || c == '-'
}

// incompleteTail is the length of a rune begun at the end of s and not finished.
func incompleteTail(s string) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(s); k++ {
		if utf8.RuneStart(s[len(s)-k]) {
			if !utf8.FullRuneInString(s[len(s)-k:]) {
				return k
			}
			return 0
		}
	}
	return 0
}
