package manifest

import "strings"

// The statements of a TOML text, as far as edit.go needs them: where each table header
// and key/value is, the key's dotted path and the value's bytes. A value may span lines
// (a multi-line string or array); a comment after it is not part of it.

const (
	stmtOther = iota // blank or comment lines
	stmtHeader
	stmtArrayHeader
	stmtKeyValue
)

type stmt struct {
	kind             int
	name             string // the table's path or the key's dotted path, quotes removed
	indent           string
	start, end       int // the lines it covers, from the line's start to after its newline
	valStart, valEnd int // a key/value's value
}

func statements(data []byte) []stmt {
	var out []stmt
	for i := 0; i < len(data); {
		s := stmt{start: i}
		j := i
		for j < len(data) && (data[j] == ' ' || data[j] == '\t') {
			j++
		}
		s.indent = string(data[i:j])
		switch {
		case j >= len(data) || data[j] == '\n' || data[j] == '\r' || data[j] == '#':
			s.kind = stmtOther
		case data[j] == '[':
			s.kind, j = stmtHeader, j+1
			if j < len(data) && data[j] == '[' {
				s.kind, j = stmtArrayHeader, j+1
			}
			k := skipKey(data, j, ']')
			s.name = tablePath(string(data[j:k]))
		default:
			k := skipKey(data, j, '=')
			s.kind, s.name = stmtKeyValue, tablePath(string(data[j:k]))
			j = k + 1
			for j < len(data) && (data[j] == ' ' || data[j] == '\t') {
				j++
			}
			s.valStart = j
			j, s.valEnd = scanValue(data, j)
		}
		for j < len(data) && data[j] != '\n' {
			j++
		}
		if j < len(data) {
			j++
		}
		s.end = j
		out = append(out, s)
		i = j
	}
	return out
}

// skipKey returns the index of stop after a (dotted, perhaps quoted) key at i, or the
// line's end.
func skipKey(data []byte, i int, stop byte) int {
	for i < len(data) && data[i] != stop && data[i] != '\n' {
		if q := data[i]; q == '"' || q == '\'' {
			for i++; i < len(data) && data[i] != q && data[i] != '\n'; i++ {
				if q == '"' && data[i] == '\\' {
					i++
				}
			}
		}
		i++
	}
	return min(i, len(data))
}

// scanValue reads the value at i: it returns where its last line's content ends (before
// a comment or the newline) and the end of the value itself.
func scanValue(data []byte, i int) (lineEnd, valEnd int) {
	depth := 0
	valEnd = i
	for i < len(data) {
		rest := string(data[i:min(len(data), i+3)])
		switch c := data[i]; {
		case rest == `"""` || rest == `'''`:
			i = skipString(data, i+3, rest, rest == `"""`)
		case c == '"' || c == '\'':
			i = skipString(data, i+1, string(c), c == '"')
		case c == '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			continue
		case c == '\n':
			if depth <= 0 {
				return i, valEnd
			}
			i++
			continue
		case c == '[' || c == '{':
			depth++
			i++
		case c == ']' || c == '}':
			depth--
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		default:
			i++
		}
		valEnd = i
	}
	return i, valEnd
}

// skipString returns the index after the string closed by quote that starts at i.
func skipString(data []byte, i int, quote string, escapes bool) int {
	for i < len(data) {
		if escapes && data[i] == '\\' {
			i += 2
			continue
		}
		if strings.HasPrefix(string(data[i:min(len(data), i+len(quote))]), quote) {
			i += len(quote)
			for len(quote) == 3 && i < len(data) && data[i] == quote[0] { // """a"""" ends with a quote in it
				i++
			}
			return i
		}
		if len(quote) == 1 && data[i] == '\n' {
			return i
		}
		i++
	}
	return len(data)
}
