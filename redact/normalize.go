package redact

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The detectors match a normalised form of the text, so that a look-alike written to
// slip past them is caught: NFKC folds compatibility forms ("＠" is "@", "４" is "4",
// the no-break spaces U+00A0, U+202F and U+2007 are a space), and the invisible
// characters below are dropped ("bob\u200b@example.org" is an address). What is
// replaced is the original text's span of each match, invisible characters and all.

// invisible reports the characters the detectors ignore: zero-width space, non-joiner
// and joiner, word joiner and the invisible operators, the byte-order mark (zero-width
// no-break space) and the soft hyphen.
func invisible(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200D, r >= 0x2060 && r <= 0x2064, r == 0xFEFF, r == 0x00AD:
		return true
	}
	return false
}

// normText is a text's normal form with, for each of its bytes, the span of the
// original text it came from. start is nil when the text is its own normal form.
type normText struct {
	s          string
	start, end []int
	orig       int // the original text's length
}

// normalize returns text's normal form and its map back to text.
func normalize(text string) normText {
	if norm.NFKC.QuickSpanString(text) == len(text) && !strings.ContainsFunc(text, invisible) {
		return normText{s: text, orig: len(text)}
	}
	var (
		b          strings.Builder
		start, end []int
		open       int // bytes at the tail of start/end whose end is not yet known
		it         norm.Iter
	)
	b.Grow(len(text))
	it.InitString(norm.NFKC, text)
	for !it.Done() {
		from := it.Pos()
		seg := it.Next()
		to := it.Pos()
		same := to > from && string(seg) == text[from:to]
		if to > from { // the bytes an earlier empty span made end where this one does
			for i := len(end) - open; i < len(end); i++ {
				end[i] = to
			}
			open = 0
		}
		for i := 0; i < len(seg); {
			r, n := utf8.DecodeRune(seg[i:])
			if invisible(r) {
				i += n
				continue
			}
			b.Write(seg[i : i+n]) // invalid UTF-8 passes through as it is, a byte at a time
			for k := range n {
				switch {
				case same:
					start, end = append(start, from+i+k), append(end, from+i+n)
				case to == from: // output the next segment's input made (a ligature's first letter)
					start, end = append(start, from), append(end, from)
					open++
				default:
					start, end = append(start, from), append(end, to)
				}
			}
			i += n
		}
	}
	for i := len(end) - open; i < len(end); i++ {
		end[i] = len(text)
	}
	return normText{s: b.String(), start: start, end: end, orig: len(text)}
}

// origStart is the original offset where normal byte i begins (len(text) at the end).
func (t normText) origStart(i int) int {
	switch {
	case i >= len(t.s):
		return t.orig
	case t.start == nil:
		return i
	}
	return t.start[i]
}

// origEnd is the original offset where the normal bytes up to i (exclusive) end.
func (t normText) origEnd(i int) int {
	switch {
	case i <= 0:
		return 0
	case t.start == nil:
		return i
	}
	return t.end[i-1]
}

// boundary reports whether the original text can be cut before normal byte i: i starts
// a rune of the normal form and a span of the original.
func (t normText) boundary(i int) bool {
	if i <= 0 || i >= len(t.s) {
		return true
	}
	if !utf8.RuneStart(t.s[i]) {
		return false
	}
	return t.start == nil || t.start[i] != t.start[i-1]
}
