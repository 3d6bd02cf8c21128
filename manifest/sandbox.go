package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/confine"
)

// Commands the host starts, [[mcp_servers]] and [providers.NAME], are confined by
// default (confine); this file holds what the two share: the confine key and the
// sandbox = { read, write, net } each ends up with.

// Confine is an entry's confine key: absent or true (confined with what the kernel
// enforces, the host warning of what it does not), false (not confined), or "required"
// (confined wholly, or not started).
type Confine int

const (
	ConfineOn Confine = iota
	ConfineOff
	ConfineRequired
)

// UnmarshalTOML accepts true, false and "required".
func (c *Confine) UnmarshalTOML(v any) error {
	switch v {
	case true:
		*c = ConfineOn
	case false:
		*c = ConfineOff
	case "required":
		*c = ConfineRequired
	default:
		return fmt.Errorf("confine: want true, false or \"required\", got %v", v)
	}
	return nil
}

// commandSandbox is the confinement of a command entry (key names it in errors): nil
// when confine = false; else its sandbox (or an empty one) with its paths absolute and
// the defaults added: read access to what the entry names (dir, and each of names that
// is an existing path, relative to base; inside a node_modules tree, the whole tree, for
// the packages it imports) and, when net is unset, defaultNet.
func (m *Manifest) commandSandbox(key string, c Confine, sb *confine.Spec, dir, base string, names []string, defaultNet bool) (*confine.Spec, error) {
	if c == ConfineOff {
		if sb != nil {
			return nil, m.ErrorAt(key+".sandbox", "sandbox confines the command, and confine = false says not to")
		}
		return nil, nil
	}
	spec := confine.Spec{}
	if sb != nil {
		spec = *sb
	}
	m.resolveSandbox(&spec)
	var read []string
	if dir != "" {
		read = append(read, dir)
	}
	for _, n := range names {
		if n == "" || strings.HasPrefix(n, "-") {
			continue
		}
		if !filepath.IsAbs(n) {
			n = filepath.Join(base, n)
		}
		if _, err := os.Stat(n); err == nil {
			read = append(read, runtimeRoot(filepath.Clean(n)))
		}
	}
	for _, p := range read {
		if !slices.Contains(spec.Read, p) && !slices.Contains(spec.Write, p) {
			spec.Read = append(spec.Read, p)
		}
	}
	if spec.Net == nil {
		spec.Net = &defaultNet
	}
	spec.Required = c == ConfineRequired
	return &spec, nil
}

// runtimeRoot is what reading p takes: p itself, or, for a path inside a node_modules
// directory, that directory (a package imports its neighbours).
func runtimeRoot(p string) string {
	const nm = string(filepath.Separator) + "node_modules" + string(filepath.Separator)
	if i := strings.Index(p, nm); i >= 0 {
		return p[:i+len(nm)-1]
	}
	return p
}

// resolveSandbox makes a sandbox's paths absolute, relative to the manifest.
func (m *Manifest) resolveSandbox(sb *confine.Spec) {
	if sb == nil {
		return
	}
	sb.Read = slices.Clone(sb.Read)
	sb.Write = slices.Clone(sb.Write)
	for j := range sb.Read {
		sb.Read[j] = m.Resolve(sb.Read[j])
	}
	for j := range sb.Write {
		sb.Write[j] = m.Resolve(sb.Write[j])
	}
}
