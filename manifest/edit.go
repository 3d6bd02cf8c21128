package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"
)

// Edits of agent.toml's text that keep everything else as the user wrote it: comments,
// blank lines, key order, quoting and indentation. Each edit touches the value of one
// key (or adds one line, or one table at the end), and is then proved: the text before
// and after are decoded and the after must equal the before with exactly that change,
// so an edit the line-level view got wrong (an inline table, a dotted key elsewhere) is
// refused with ErrNotEditable, never written. `agenthost insights apply` uses them
// through ReplaceFile.

// ErrNotEditable is an edit this file's layout does not allow line by line.
var ErrNotEditable = errors.New("cannot be edited line by line here: change it by hand")

// SetKey sets key in table ("agent", "agent.plan", "tools.web") to value (an int,
// float64, bool, string or []string): in place when the key is there (its comment
// kept), else as a new line at the end of the table, else in a new table at the end of
// the file.
func SetKey(data []byte, table, key string, value any) ([]byte, error) {
	rendered, err := renderValue(value)
	if err != nil {
		return nil, err
	}
	return setRendered(data, table, key, rendered, value)
}

// AppendToString appends text to the string key in table, after a blank line, written
// back as a multi-line string; absent, the key is added with text alone.
func AppendToString(data []byte, table, key, text string) ([]byte, error) {
	before, err := decodeMap(data)
	if err != nil {
		return nil, err
	}
	v := text
	if cur, ok := lookup(before, table+"."+key); ok {
		s, isStr := cur.(string)
		if !isStr {
			return nil, fmt.Errorf("[%s] %s is not a string", table, key)
		}
		v = strings.TrimRight(s, "\n") + "\n\n" + text
	}
	return setRendered(data, table, key, multiline(v), v)
}

// PrependArrayTable adds a [[array]] entry with fields (key, value pairs, in order)
// before the first [[array]] entry, so that it comes first in the list (the first
// approval rule that matches decides), or at the end of the file when there is none.
func PrependArrayTable(data []byte, array string, fields [][2]any) ([]byte, error) {
	var b strings.Builder
	entry := map[string]any{}
	fmt.Fprintf(&b, "[[%s]]\n", array)
	for _, f := range fields {
		r, err := renderValue(f[1])
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s = %s\n", f[0], r)
		entry[f[0].(string)] = f[1]
	}
	at, found := len(data), false
	for _, s := range statements(data) {
		if s.kind == stmtArrayHeader && s.name == array {
			at, found = s.start, true
			break
		}
	}
	block := b.String()
	if found {
		block += "\n"
	} else {
		block = tail(data) + block
	}
	out := splice(data, at, at, block)
	return out, prove(data, out, func(m map[string]any) error {
		list, _ := m[array].([]map[string]any)
		m[array] = append([]map[string]any{normalize(entry)}, list...)
		return nil
	})
}

func setRendered(data []byte, table, key, rendered string, value any) ([]byte, error) {
	var out []byte
	sts := statements(data)
	section, header, lastKV := "", -1, -1
	for i, s := range sts {
		switch s.kind {
		case stmtHeader, stmtArrayHeader:
			section = s.name
			if s.kind == stmtHeader && s.name == table {
				header, lastKV = i, i
			}
		case stmtKeyValue:
			full := s.name
			if section != "" {
				full = section + "." + s.name
			}
			if full == table+"."+key {
				out = splice(data, s.valStart, s.valEnd, rendered)
			}
			if header >= 0 && section == table {
				lastKV = i
			}
		}
		if out != nil {
			break
		}
	}
	switch {
	case out != nil:
	case header >= 0:
		s := sts[lastKV]
		indent := ""
		if lastKV != header {
			indent = s.indent
		}
		out = splice(data, s.end, s.end, fmt.Sprintf("%s%s = %s\n", indent, key, rendered))
	default:
		out = splice(data, len(data), len(data), fmt.Sprintf("%s[%s]\n%s = %s\n", tail(data), table, key, rendered))
	}
	return out, prove(data, out, func(m map[string]any) error {
		return set(m, strings.Split(table, "."), key, normalize(map[string]any{"v": value})["v"])
	})
}

// tail is what goes before a table added at the end: a newline when the file does not
// end with one, and a blank line.
func tail(data []byte) string {
	switch {
	case len(data) == 0:
		return ""
	case data[len(data)-1] != '\n':
		return "\n\n"
	}
	return "\n"
}

func splice(data []byte, from, to int, s string) []byte {
	out := make([]byte, 0, len(data)+len(s))
	out = append(out, data[:from]...)
	out = append(out, s...)
	return append(out, data[to:]...)
}

// prove decodes before and after and checks that after is before changed by change,
// and nothing else.
func prove(before, after []byte, change func(map[string]any) error) error {
	want, err := decodeMap(before)
	if err != nil {
		return err
	}
	if err := change(want); err != nil {
		return err
	}
	got, err := decodeMap(after)
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNotEditable, err)
	}
	if !reflect.DeepEqual(want, got) {
		return ErrNotEditable
	}
	return nil
}

func decodeMap(data []byte) (map[string]any, error) {
	m := map[string]any{}
	if _, err := toml.Decode(string(data), &m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return m, nil
}

func lookup(m map[string]any, path string) (any, bool) {
	parts := strings.Split(path, ".")
	var cur any = m
	for _, p := range parts {
		t, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = t[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func set(m map[string]any, table []string, key string, v any) error {
	for _, p := range table {
		next, ok := m[p]
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		t, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %w", strings.Join(table, "."), ErrNotEditable)
		}
		m = t
	}
	m[key] = v
	return nil
}

// renderValue writes value as TOML, as the encoder does.
func renderValue(value any) (string, error) {
	b, err := toml.Marshal(map[string]any{"v": value})
	if err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	r, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "v = ")
	if !ok {
		return "", fmt.Errorf("manifest: %v is not a value", value)
	}
	return r, nil
}

// normalize is v as the decoder gives it back (int64, []any ...).
func normalize(v map[string]any) map[string]any {
	b, err := toml.Marshal(v)
	if err != nil {
		return v
	}
	out := map[string]any{}
	if _, err := toml.Decode(string(b), &out); err != nil {
		return v
	}
	return out
}

// multiline writes s as a multi-line basic string: what people write a prompt as.
func multiline(s string) string {
	var b bytes.Buffer
	b.WriteString("\"\"\"\n")
	for _, r := range s {
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString("\"\"\"")
	return b.String()
}
