package loop

import (
	"context"
	"encoding/json"
	"fmt"
)

// Tool is something the model can call. Call returns an error when the tool could not run
// at all (a trap, a timeout); the loop turns it into an error tool message and goes on.
// A tool that ran and failed returns a ToolResult with IsError instead.
type Tool interface {
	Spec() ToolSpec
	Call(ctx context.Context, call ToolCall) (ToolResult, error)
}

// FuncTool adapts a Go function to a Tool.
type FuncTool struct {
	ToolSpec
	Fn func(ctx context.Context, call ToolCall) (ToolResult, error)
}

func (f FuncTool) Spec() ToolSpec { return f.ToolSpec }
func (f FuncTool) Call(ctx context.Context, c ToolCall) (ToolResult, error) {
	return f.Fn(ctx, c)
}

// ToolSet is an immutable set of tools with unique names, each input schema compiled
// once. Build it with NewToolSet.
type ToolSet struct {
	order   []string
	entries map[string]*toolEntry
	specs   []ToolSpec // in order: what a run that may use every tool offers (read only)
}

type toolEntry struct {
	tool   Tool
	spec   ToolSpec
	schema *argsSchema // nil when the tool has no schema
}

// validate checks arguments against the tool's input schema. Arguments that are not
// JSON pass: the tool gets them raw and says what it makes of them (L5).
func (e *toolEntry) validate(args string) error {
	if e.schema == nil {
		return nil
	}
	if f := e.schema.flat; f != nil && f.accepts(args) {
		return nil // what the fast path accepts is JSON by construction: one scan, not two
	}
	if !json.Valid([]byte(args)) {
		return nil
	}
	return e.schema.validate(args)
}

// NewToolSet checks names and compiles every input schema, so a bad schema is found when
// the agent is built, not when the model first calls the tool.
func NewToolSet(tools ...Tool) (*ToolSet, error) {
	ts := &ToolSet{entries: make(map[string]*toolEntry, len(tools))}
	for i, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("tool %d is nil", i)
		}
		spec := t.Spec()
		if spec.Name == "" {
			return nil, fmt.Errorf("tool %d has no name", i)
		}
		if _, dup := ts.entries[spec.Name]; dup {
			return nil, fmt.Errorf("duplicate tool name %q", spec.Name)
		}
		e := &toolEntry{tool: t, spec: spec}
		if len(spec.InputSchema) > 0 && string(spec.InputSchema) != "null" {
			s, err := compileSchema(spec.Name, spec.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tool %q: %w", spec.Name, err)
			}
			e.schema = s
		}
		ts.entries[spec.Name] = e
		ts.order = append(ts.order, spec.Name)
		ts.specs = append(ts.specs, spec)
	}
	return ts, nil
}

// Len is the number of tools.
func (ts *ToolSet) Len() int {
	if ts == nil {
		return 0
	}
	return len(ts.order)
}

// Lookup returns the tool with that name.
func (ts *ToolSet) Lookup(name string) (Tool, bool) {
	e := ts.lookup(name)
	if e == nil {
		return nil, false
	}
	return e.tool, true
}

func (ts *ToolSet) lookup(name string) *toolEntry {
	if ts == nil {
		return nil
	}
	return ts.entries[name]
}

// Specs lists the tool specs in the order the tools were given.
func (ts *ToolSet) Specs() []ToolSpec {
	if ts == nil {
		return nil
	}
	out := make([]ToolSpec, len(ts.order))
	for i, n := range ts.order {
		out[i] = ts.entries[n].spec
	}
	return out
}

// offered picks the specs a run offers: only allowed names (all when allowed is nil),
// names in order first, the rest in set order.
func (ts *ToolSet) offered(allowed, order []string) []ToolSpec {
	if ts.Len() == 0 {
		return nil
	}
	if allowed == nil && order == nil {
		return ts.specs[:len(ts.specs):len(ts.specs)] // shared, read only: an append copies
	}
	ok := func(n string) bool {
		if allowed == nil {
			return true
		}
		for _, a := range allowed {
			if a == n {
				return true
			}
		}
		return false
	}
	seen := make(map[string]bool, len(ts.order))
	var out []ToolSpec
	for _, n := range order {
		if e := ts.entries[n]; e != nil && ok(n) && !seen[n] {
			seen[n] = true
			out = append(out, e.spec)
		}
	}
	for _, n := range ts.order {
		if ok(n) && !seen[n] {
			out = append(out, ts.entries[n].spec)
		}
	}
	return out
}

// canonicalJSON re-encodes a JSON document with sorted keys and no spaces, so two
// argument strings that mean the same thing compare equal (duplicate detection, L8).
// It reports false when s is not JSON.
func canonicalJSON(s string) (string, bool) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return "", false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// ValidateArguments checks arguments for the tool name as a run does before calling it
// (L5): "" counts as {}, and a schema violation names each failing field. It is for
// callers outside a run (`agenthost plugins call`), so a call made by hand is refused
// exactly when the model's would be. Unlike a run, it refuses arguments that are not
// JSON: a person can fix them; the model's raw text is passed on for the tool to judge.
func (ts *ToolSet) ValidateArguments(name, args string) error {
	e := ts.lookup(name)
	if e == nil {
		return fmt.Errorf("unknown tool %q", name)
	}
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return fmt.Errorf("arguments for tool '%s' are not JSON", name)
	}
	if e.schema != nil {
		if err := e.schema.validate(args); err != nil {
			return fmt.Errorf("invalid arguments for tool '%s': %v", name, err)
		}
	}
	return nil
}
