package manifest

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// keyLines maps the keys of a TOML file to the lines they are on, so that errors found
// after decoding (a missing file, an unknown provider) can name a line too. Keys are
// dotted paths with array-of-tables indexes: "plugins.1.permissions.memory".
type keyLines struct {
	lines map[string]int
	order []string
}

func indexKeys(data []byte) *keyLines {
	k := &keyLines{lines: map[string]int{}}
	counts := map[string]int{} // array-of-tables path → entries seen
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[["):
			name := tablePath(strings.SplitN(line[2:], "]]", 2)[0])
			arr := name // index the parents, not the array itself
			if i := strings.LastIndexByte(name, '.'); i >= 0 {
				arr = k.withIndexes(name[:i]) + name[i:]
			}
			table = fmt.Sprintf("%s.%d", arr, counts[arr])
			counts[arr]++
			k.add(table, n)
		case strings.HasPrefix(line, "["):
			name := tablePath(strings.SplitN(line[1:], "]", 2)[0])
			table = k.withIndexes(name)
			k.add(table, n)
		default:
			eq := strings.IndexByte(line, '=')
			if eq <= 0 {
				continue
			}
			key := tablePath(line[:eq])
			if table != "" {
				key = table + "." + key
			}
			k.add(key, n)
		}
	}
	return k
}

func (k *keyLines) add(path string, n int) {
	if _, seen := k.lines[path]; !seen {
		k.order = append(k.order, path)
	}
	k.lines[path] = n
}

// withIndexes turns a header path such as "plugins.permissions" into the path of the
// current array entry, "plugins.2.permissions".
func (k *keyLines) withIndexes(name string) string {
	parts := strings.Split(name, ".")
	out := ""
	for _, p := range parts {
		if out != "" {
			out += "."
		}
		out += p
		if last := k.lastIndex(out); last != "" {
			out = last
		}
	}
	return out
}

// lastIndex returns "path.N" for the latest array entry under path, if path is an array.
func (k *keyLines) lastIndex(path string) string {
	best := ""
	for i := 0; ; i++ {
		p := fmt.Sprintf("%s.%d", path, i)
		if _, ok := k.lines[p]; !ok {
			return best
		}
		best = p
	}
}

// line returns the line of an indexed path, or of its nearest ancestor (a key inside an
// inline table lives on its parent's line).
func (k *keyLines) line(path string) int {
	for p := path; p != ""; {
		if n, ok := k.lines[p]; ok {
			return n
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

// find returns the line of a key path as the TOML decoder names it (no indexes).
func (k *keyLines) find(key string) int {
	for _, p := range k.order {
		if stripIndexes(p) == key {
			return k.lines[p]
		}
	}
	for p := key; p != ""; { // a key of an inline table
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
		for _, q := range k.order {
			if stripIndexes(q) == p {
				return k.lines[q]
			}
		}
	}
	return 0
}

func stripIndexes(p string) string {
	parts := strings.Split(p, ".")
	out := parts[:0]
	for _, s := range parts {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			continue
		}
		out = append(out, s)
	}
	return strings.Join(out, ".")
}

// displayKey writes "plugins.1.wasm" as "plugins[1].wasm".
func displayKey(p string) string {
	parts := strings.Split(p, ".")
	var b strings.Builder
	for i, s := range parts {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			b.WriteString("[" + s + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// tablePath normalises a dotted key: trims spaces and quotes of each part.
func tablePath(s string) string {
	parts := strings.Split(strings.TrimSpace(s), ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// all returns the lines of every occurrence of a key named without indexes.
func (k *keyLines) all(key string) []int {
	var out []int
	for _, p := range k.order {
		if stripIndexes(p) == key {
			out = append(out, k.lines[p])
		}
	}
	return out
}
