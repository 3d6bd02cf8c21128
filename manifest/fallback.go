package manifest

import (
	"fmt"
	"slices"
	"sort"

	"github.com/BurntSushi/toml"
)

// Fallback is one entry of a tool's fallback list: a tool's name ("backup"), or a
// table { tool = "backup", arguments = { q = "query" } } whose arguments map each of
// the fallback's argument names to the failed call's argument it takes (docs/loop.md,
// "Tool fallback"). Without arguments the fallback gets the same arguments, so it must
// take the same input schema; with them, each name must be one its schema has (the host
// checks both once the tools' schemas are known: host/toolfallback.go).
type Fallback struct {
	Tool      string
	Arguments map[string]string // nil: the same arguments
}

// FallbackList is a tool's fallback key.
type FallbackList []Fallback

// Names are the fallbacks' tools, in order.
func (l FallbackList) Names() []string {
	out := make([]string, len(l))
	for i, f := range l {
		out[i] = f.Tool
	}
	return out
}

// UnmarshalTOML implements toml.Unmarshaler: a list of names and tables.
func (l *FallbackList) UnmarshalTOML(v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf(`want a list of tool names or { tool = "NAME", arguments = { ... } } tables, got %T`, v)
	}
	out := make(FallbackList, 0, len(list))
	for _, e := range list {
		switch x := e.(type) {
		case string:
			out = append(out, Fallback{Tool: x})
		case map[string]any:
			f, err := fallbackTable(x)
			if err != nil {
				return err
			}
			out = append(out, f)
		default:
			return fmt.Errorf(`want a tool's name or { tool = "NAME", arguments = { ... } }, got %v`, e)
		}
	}
	*l = out
	return nil
}

// fallbackTable decodes { tool = "NAME", arguments = { TO = "FROM" } }.
func fallbackTable(x map[string]any) (Fallback, error) {
	var f Fallback
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "tool":
			s, ok := x[k].(string)
			if !ok {
				return f, fmt.Errorf("a fallback's tool is a name, got %v", x[k])
			}
			f.Tool = s
		case "arguments":
			m, ok := x[k].(map[string]any)
			if !ok {
				return f, fmt.Errorf(`a fallback's arguments map its argument names to the failed call's: { q = "query" }, got %v`, x[k])
			}
			f.Arguments = make(map[string]string, len(m))
			for to, from := range m {
				s, ok := from.(string)
				if !ok || s == "" || to == "" {
					return f, fmt.Errorf("fallback arguments: %q = %v: want the name of one of the failed call's arguments", to, from)
				}
				f.Arguments[to] = s
			}
		default:
			return f, fmt.Errorf("a fallback table has tool and arguments, not %q", k)
		}
	}
	return f, nil
}

// ToolConfig is a [tools.NAME] table: how the loop treats the tool the model sees as
// NAME, whoever offers it (a plugin, an MCP server, the embedding program's Go tools).
type ToolConfig struct {
	// Fallback: the tools called in turn when a call of this one fails.
	Fallback FallbackList `toml:"fallback"`
	// Cost is a call's declared cost (any unit, the same across a group): in a
	// [tool_groups.NAME] the cheapest member is tried first (toolgroups.go).
	Cost float64 `toml:"cost"`
}

// checkTools checks the [tools.NAME] tables as far as the manifest can; that NAME is a
// loaded tool is the host's to check.
func (m *Manifest) checkTools() error {
	names := make([]string, 0, len(m.Tools))
	for n := range m.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := m.checkFallback(n, m.Tools[n].Fallback, "tools."+n+".fallback"); err != nil {
			return err
		}
	}
	return nil
}

// checkFallback checks tool's fallback list as far as the manifest can: names, not the
// tool itself, each once. Whether each names a loaded tool taking the same arguments
// (the same input schema), or names in its argument mapping only arguments the
// fallback has, is checked when the agent is built, once the tools' schemas are known
// (host/toolfallback.go).
func (m *Manifest) checkFallback(tool string, list FallbackList, key string) error {
	names := list.Names()
	for i, f := range names {
		switch {
		case f == "":
			return m.ErrorAt(key, "a fallback needs a tool's name")
		case f == tool:
			return m.ErrorAt(key, "tool %q cannot fall back to itself", tool)
		case slices.Contains(names[:i], f):
			return m.ErrorAt(key, "fallback %q is listed twice", f)
		}
	}
	return nil
}

// undecoded is md.Undecoded() without the keys of the tables inside a fallback list:
// the decoder does not mark the keys of inline tables in an array that an Unmarshaler
// took (FallbackList checks them itself, and refuses an unknown one).
func undecoded(md toml.MetaData) []toml.Key {
	var out []toml.Key
	for _, k := range md.Undecoded() {
		inFallback := len(k) > 3 && k[2] == "fallback" && (k[0] == "tools" || k[0] == "plugins" && k[1] == "tools")
		if !inFallback {
			out = append(out, k)
		}
	}
	return out
}
