package workflow

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
)

// Definition is a [workflows.NAME] table.
type Definition struct {
	Description string `toml:"description" json:"description,omitempty"`
	// Inputs is a JSON Schema the run's inputs must match (a TOML table).
	Inputs Object `toml:"inputs" json:"inputs,omitempty"`
	Steps  []Step         `toml:"steps" json:"steps"`
	// Output is a CEL expression over inputs and steps giving the run's result
	// (default: every finished step's output, by id).
	Output string `toml:"output" json:"output,omitempty"`
}

// Step is one step: exactly one of Tool (with Args), Prompt or Approval.
type Step struct {
	ID        string         `toml:"id" json:"id"`
	Tool      string         `toml:"tool" json:"tool,omitempty"`
	Args      Object         `toml:"args" json:"args,omitempty"`
	Prompt    string         `toml:"prompt" json:"prompt,omitempty"`
	Approval  string         `toml:"approval" json:"approval,omitempty"`
	DependsOn []string       `toml:"depends_on" json:"depends_on,omitempty"`
	If        string         `toml:"if" json:"if,omitempty"`
	ForEach   string         `toml:"for_each" json:"for_each,omitempty"`
	Retry     int            `toml:"retry" json:"retry,omitempty"`
	Timeout   string         `toml:"timeout" json:"timeout,omitempty"`
}

// Object is a table of free-form values (a JSON Schema, tool arguments). It decodes
// itself from TOML (the toml.Unmarshaler method set), so the manifest's unknown-key check
// leaves its keys alone: they are data, not settings.
type Object map[string]any

// UnmarshalTOML takes a TOML table.
func (o *Object) UnmarshalTOML(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("want a table, not %T", v)
	}
	*o = m
	return nil
}

// KeyError is a definition error at a manifest key (workflows.NAME.steps.N.KEY).
type KeyError struct {
	Key, Msg string
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Msg }

// Workflow is a compiled definition.
type Workflow struct {
	Name   string
	Def    Definition
	order  []int // steps in a dependency order
	steps  []compiled
	output cel.Program
	inputs []byte // the inputs schema as JSON, nil when none
}

type compiled struct {
	Step
	ifProg, forEach cel.Program
	timeout         time.Duration
	// texts are the ${…} templates of the step: args (by JSON path), prompt, approval.
	texts map[string]*template
}

// MaxSteps bounds a definition; MaxRetry a step's retries.
const (
	MaxSteps = 200
	MaxRetry = 10
)

var idPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Compile checks a definition and compiles its expressions. hasTool says whether a
// tool name (as the model sees it) exists.
func Compile(name string, def Definition, hasTool func(string) bool) (*Workflow, error) {
	base := "workflows." + name
	if len(def.Steps) == 0 {
		return nil, &KeyError{base + ".steps", "a workflow needs steps"}
	}
	if len(def.Steps) > MaxSteps {
		return nil, &KeyError{base + ".steps", fmt.Sprintf("%d steps, more than %d", len(def.Steps), MaxSteps)}
	}
	w := &Workflow{Name: name, Def: def}
	index := map[string]int{}
	for i, s := range def.Steps {
		key := fmt.Sprintf("%s.steps.%d", base, i)
		if !idPattern.MatchString(s.ID) {
			return nil, &KeyError{key + ".id", fmt.Sprintf("id %q: letters, digits and _, not starting with a digit (a CEL name: steps.ID)", s.ID)}
		}
		if j, dup := index[s.ID]; dup {
			return nil, &KeyError{key + ".id", fmt.Sprintf("duplicate id %q (also steps[%d])", s.ID, j)}
		}
		index[s.ID] = i
	}
	env, err := newEnv()
	if err != nil {
		return nil, err
	}
	for i, s := range def.Steps {
		c, err := compileStep(env, fmt.Sprintf("%s.steps.%d", base, i), s, index, hasTool)
		if err != nil {
			return nil, err
		}
		w.steps = append(w.steps, c)
	}
	if w.order, err = topoOrder(def.Steps, index); err != nil {
		return nil, &KeyError{base + ".steps", err.Error()}
	}
	if def.Output != "" {
		if w.output, err = program(env, def.Output); err != nil {
			return nil, &KeyError{base + ".output", err.Error()}
		}
	}
	if def.Inputs != nil {
		if w.inputs, err = json.Marshal(def.Inputs); err != nil {
			return nil, &KeyError{base + ".inputs", err.Error()}
		}
	}
	return w, nil
}

func compileStep(env *cel.Env, key string, s Step, index map[string]int, hasTool func(string) bool) (compiled, error) {
	c := compiled{Step: s, texts: map[string]*template{}}
	kinds := 0
	for _, set := range []bool{s.Tool != "", s.Prompt != "", s.Approval != ""} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds != 1:
		return c, &KeyError{key, "a step has exactly one of tool, prompt and approval"}
	case s.Tool != "" && hasTool != nil && !hasTool(s.Tool):
		return c, &KeyError{key + ".tool", fmt.Sprintf("no tool %q", s.Tool)}
	case s.Tool == "" && len(s.Args) > 0:
		return c, &KeyError{key + ".args", "args belong to a tool step"}
	case s.Retry < 0 || s.Retry > MaxRetry:
		return c, &KeyError{key + ".retry", fmt.Sprintf("%d: want 0 to %d", s.Retry, MaxRetry)}
	}
	for _, d := range s.DependsOn {
		if _, ok := index[d]; !ok || d == s.ID {
			return c, &KeyError{key + ".depends_on", fmt.Sprintf("no other step %q", d)}
		}
	}
	var err error
	if s.Timeout != "" {
		if c.timeout, err = time.ParseDuration(s.Timeout); err != nil || c.timeout <= 0 {
			return c, &KeyError{key + ".timeout", fmt.Sprintf("%q is not a positive duration", s.Timeout)}
		}
	}
	if s.If != "" {
		if c.ifProg, err = program(env, s.If); err != nil {
			return c, &KeyError{key + ".if", err.Error()}
		}
	}
	if s.ForEach != "" {
		if c.forEach, err = program(env, s.ForEach); err != nil {
			return c, &KeyError{key + ".for_each", err.Error()}
		}
	}
	for field, text := range map[string]string{"prompt": s.Prompt, "approval": s.Approval} {
		if text != "" {
			if c.texts[field], err = parseTemplate(env, text); err != nil {
				return c, &KeyError{key + "." + field, err.Error()}
			}
		}
	}
	if err := walkStrings(map[string]any(s.Args), "args", func(path, text string) error {
		t, err := parseTemplate(env, text)
		if err != nil {
			return &KeyError{key + "." + path, err.Error()}
		}
		c.texts[path] = t
		return nil
	}); err != nil {
		return c, err
	}
	return c, nil
}

// topoOrder orders the steps so that each comes after its dependencies, or names a cycle.
func topoOrder(steps []Step, index map[string]int) ([]int, error) {
	state := make([]int, len(steps)) // 0 new, 1 visiting, 2 done
	var order []int
	var visit func(i int, path []string) error
	visit = func(i int, path []string) error {
		switch state[i] {
		case 1:
			at := slices.Index(path, steps[i].ID)
			return fmt.Errorf("a cycle: %s", strings.Join(append(path[at:], steps[i].ID), " → "))
		case 2:
			return nil
		}
		state[i] = 1
		for _, d := range steps[i].DependsOn {
			if err := visit(index[d], append(path, steps[i].ID)); err != nil {
				return err
			}
		}
		state[i] = 2
		order = append(order, i)
		return nil
	}
	for i := range steps {
		if err := visit(i, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// walkStrings calls f for every string in v (maps and lists walked), with its key path.
func walkStrings(v any, path string, f func(path, s string) error) error {
	switch x := v.(type) {
	case string:
		return f(path, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err := walkStrings(x[k], path+"."+k, f); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := walkStrings(e, fmt.Sprintf("%s.%d", path, i), f); err != nil {
				return err
			}
		}
	}
	return nil
}
