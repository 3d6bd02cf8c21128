package main

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// What the CLI prints carries text it did not write: the model's answers, tool results,
// session entries, plugins' logs and errors. A terminal obeys what such text holds (an
// OSC 52 that sets the clipboard, a screen clear, a carriage return that overwrites the
// line, a bidi override that reorders it), so the text is neutralised before it gets
// there, in one of two places: safeWriter, which the root command's stdout and stderr
// and main's error line go through (every command's printing), and cleanValue, which
// the transcript applies to each event (it writes its own colours, so it writes to the
// terminal itself: newTranscript).
//
// Neutralised: C0 controls but \n and \t, shown as \x1b; DEL, C1 controls and the bidi
// controls (U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069), shown as \u202e;
// bytes that are not UTF-8, shown as \xff. A \r before \n is dropped (CRLF line ends).
// The \u forms are JSON's own escapes, and JSON never holds a raw C0 control, so --json
// output written through it decodes to the same values.

// termText returns s neutralised for a terminal.
func termText(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\r' && i+1 < len(s) && s[i+1] == '\n':
		case r < 0x20 && r != '\n' && r != '\t':
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clean is whether s needs nothing neutralised (the common case, without allocating).
func clean(s string) bool {
	for i, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || unsafeRune(r) || (r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) {
			return false
		}
	}
	return true
}

// unsafeRune is a control a terminal acts on or a bidi control, above C0.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x7f && r <= 0x9f, r == 0x061c, r == 0x200e, r == 0x200f,
		r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// safeWriter neutralises what is written through it. A write that ends inside a UTF-8
// sequence, or on a \r, keeps that tail until the next write decides it.
type safeWriter struct {
	mu   sync.Mutex
	w    io.Writer
	tail []byte
}

func newSafeWriter(w io.Writer) *safeWriter { return &safeWriter{w: w} }

func (s *safeWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf := append(s.tail, p...)
	cut := len(buf) - incompleteTail(buf)
	s.tail = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(s.w, termText(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// incompleteTail is how many bytes at the end of b a later write may complete: a \r
// (CRLF), or the start of a UTF-8 sequence (at most 3 bytes).
func incompleteTail(b []byte) int {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return 1
	}
	for n := 1; n <= 3 && n <= len(b); n++ {
		c := b[len(b)-n]
		if c < 0x80 {
			return 0
		}
		if c >= 0xc0 { // a sequence's first byte: incomplete when it wants more than n
			if want := seqLen(c); want > n {
				return n
			}
			return 0
		}
	}
	return 0
}

func seqLen(c byte) int {
	switch {
	case c >= 0xf0:
		return 4
	case c >= 0xe0:
		return 3
	}
	return 2
}

// underlying is the writer w neutralises for, or w itself (for isTerminal).
func underlying(w io.Writer) io.Writer {
	if s, ok := w.(*safeWriter); ok {
		return s.w
	}
	return w
}

// cleanValue returns a copy of v with every string in it (and every byte slice, such
// as a json.RawMessage) neutralised by termText; v itself is left as it was, since an
// event's data is shared with its other consumers.
func cleanValue[T any](v T) T {
	out, _ := cleanReflect(reflect.ValueOf(&v).Elem()).Interface().(T)
	return out
}

func cleanReflect(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		return reflect.ValueOf(termText(v.String())).Convert(v.Type())
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(cleanReflect(v.Elem()))
		return p
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(cleanReflect(v.Elem()))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := range v.NumField() {
			if f := out.Field(i); f.CanSet() {
				f.Set(cleanReflect(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return reflect.ValueOf([]byte(termText(string(v.Bytes())))).Convert(v.Type())
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(cleanReflect(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(cleanReflect(it.Key()), cleanReflect(it.Value()))
		}
		return out
	}
	return v
}
