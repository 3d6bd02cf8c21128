package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
)

// fallbackDecl is one tool's fallback list as the manifest declares it, at its key.
type fallbackDecl struct {
	key  string
	list manifest.FallbackList
}

// toolFallbacks is the loop's Config.ToolFallbacks for an agent whose tools are own,
// from two places: a [[plugins.tools]] entry's fallback (a plugin's tool, by its own
// name) and a [tools.NAME] table's (any tool, by the name the model sees: a plugin's, an
// MCP server's, a Go tool's). A tool with both is refused: keep one. Each fallback must
// be a tool the agent may use. Without an argument mapping it is called with the failed
// call's arguments, so its input schema must be the same (compared as JSON values); with
// one, every name the mapping gives must be an argument of the fallback's schema, every
// name it takes one of the failed tool's, and every argument the fallback requires must
// be mapped. Otherwise the agent is not built and the error names the key. A tool the
// agent may not use keeps no fallbacks (its calls are refused anyway).
func (h *Host) toolFallbacks(own []loop.Tool) (map[string][]loop.ToolFallback, error) {
	decls, err := h.fallbackDecls(own)
	if err != nil {
		return nil, err
	}
	specs := make(map[string]loop.ToolSpec, len(own))
	for _, t := range own {
		specs[t.Spec().Name] = t.Spec()
	}
	names := make([]string, 0, len(decls))
	for n := range decls {
		names = append(names, n)
	}
	sort.Strings(names)
	var out map[string][]loop.ToolFallback
	for _, name := range names {
		d := decls[name]
		from, ok := specs[name]
		if !ok {
			continue
		}
		var list []loop.ToolFallback
		for _, fb := range d.list {
			to, ok := specs[fb.Tool]
			if !ok {
				return nil, h.Manifest.ErrorAt(d.key, "no tool %q among the agent's tools: a fallback must be a loaded tool the agent may use", fb.Tool)
			}
			if err := checkFallbackArgs(name, from, to, fb.Arguments); err != nil {
				return nil, h.Manifest.ErrorAt(d.key, "%v", err)
			}
			list = append(list, loop.ToolFallback{Tool: fb.Tool, Arguments: fb.Arguments})
		}
		if out == nil {
			out = map[string][]loop.ToolFallback{}
		}
		out[name] = list
	}
	return out, nil
}

// fallbackDecls gathers the declared fallback lists by the name the model sees. A
// [tools.NAME] table must name a loaded tool (of any agent).
func (h *Host) fallbackDecls(own []loop.Tool) (map[string]fallbackDecl, error) {
	loaded := map[string]bool{}
	for _, ts := range [][]loop.Tool{h.tools, own} {
		for _, t := range ts {
			loaded[t.Spec().Name] = true
		}
	}
	decls := map[string]fallbackDecl{}
	for _, t := range h.tools {
		ot, ok := t.(ownedTool)
		if !ok {
			continue
		}
		for i, p := range h.Manifest.Plugins {
			for j, d := range p.Tools {
				if p.Name == ot.owner() && d.Name == ot.ownName() && len(d.Fallback) > 0 {
					decls[ot.modelName()] = fallbackDecl{fmt.Sprintf("plugins.%d.tools.%d.fallback", i, j), d.Fallback}
				}
			}
		}
	}
	names := make([]string, 0, len(h.Manifest.Tools))
	for n := range h.Manifest.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !loaded[n] {
			return nil, h.Manifest.ErrorAt("tools."+n, "no loaded tool %q (a [tools.NAME] table names a tool as the model sees it)", n)
		}
		c := h.Manifest.Tools[n]
		if len(c.Fallback) == 0 {
			continue
		}
		if d, dup := decls[n]; dup {
			return nil, h.Manifest.ErrorAt("tools."+n+".fallback", "tool %q already has a fallback list at %s: keep one", n, d.key)
		}
		decls[n] = fallbackDecl{"tools." + n + ".fallback", c.Fallback}
	}
	return decls, nil
}

// checkFallbackArgs checks that fallback to can take what a failed call of from (named
// name) gives it: the same schema without a mapping m, else m's names on both sides.
func checkFallbackArgs(name string, from, to loop.ToolSpec, m map[string]string) error {
	if m == nil {
		if !sameSchema(from.InputSchema, to.InputSchema) {
			return fmt.Errorf("%q takes other arguments than %q (its input_schema differs): without an argument mapping a fallback is called with the same arguments", to.Name, name)
		}
		return nil
	}
	toProps, toReq := schemaArgs(to.InputSchema)
	fromProps, _ := schemaArgs(from.InputSchema)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if toProps != nil && !slices.Contains(toProps, k) {
			return fmt.Errorf("arguments: %q has no argument %q (its arguments: %v)", to.Name, k, toProps)
		}
		if fromProps != nil && !slices.Contains(fromProps, m[k]) {
			return fmt.Errorf("arguments: %q = %q: %q has no argument %q (its arguments: %v)", k, m[k], name, m[k], fromProps)
		}
	}
	for _, r := range toReq {
		if _, ok := m[r]; !ok {
			return fmt.Errorf("arguments: %q requires %q, which the mapping does not give", to.Name, r)
		}
	}
	return nil
}

// schemaArgs are an input schema's top-level property names (sorted; nil when it lists
// none: any arguments) and its required ones.
func schemaArgs(s json.RawMessage) (props, required []string) {
	var v struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(s, &v) != nil {
		return nil, nil
	}
	for p := range v.Properties {
		props = append(props, p)
	}
	sort.Strings(props)
	return props, v.Required
}

// sameSchema reports whether two input schemas are the same JSON value (none and null
// are the same: any arguments).
func sameSchema(a, b json.RawMessage) bool {
	norm := func(s json.RawMessage) any {
		s = bytes.TrimSpace(s)
		if len(s) == 0 || string(s) == "null" {
			return nil
		}
		var v any
		if json.Unmarshal(s, &v) != nil {
			return string(s)
		}
		return v
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
