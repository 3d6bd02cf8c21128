package workflow

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/cel-go/cel"

	"github.com/agenthost/agenthost/loop"
)

// Definition is one [workflows.NAME] table as the manifest decodes it.
type Definition struct {
	Description string `toml:"description" json:"description,omitempty" yaml:"description"`
	// Inputs is the JSON Schema the run's inputs must match (optional).
	Inputs Table `toml:"inputs" json:"inputs,omitempty" yaml:"inputs"`
	// MaxParallel bounds the steps (and fan-out items) running at once; 0 is 4.
	MaxParallel int    `toml:"max_parallel" json:"max_parallel,omitempty" yaml:"max_parallel"`
	Steps       []Step `toml:"steps" json:"steps" yaml:"steps"`
}

// Step is one [[workflows.NAME.steps]] entry. Exactly one of Tool, Prompt, Approval and
// Workflow says its kind.
type Step struct {
	ID        string   `toml:"id" json:"id" yaml:"id"`
	Tool      string   `toml:"tool" json:"tool,omitempty" yaml:"tool"`                // a tool, named as the model sees it
	Arguments Table    `toml:"arguments" json:"arguments,omitempty" yaml:"arguments"` // the tool's arguments; strings may hold ${expr}
	Prompt    string   `toml:"prompt" json:"prompt,omitempty" yaml:"prompt"`          // an agent step: a ReAct run of Agent on this prompt
	Agent     string   `toml:"agent" json:"agent,omitempty" yaml:"agent"`             // the agent of a prompt step ("" = the entry agent)
	Agents    []string `toml:"agents" json:"agents,omitempty" yaml:"agents"`          // a prompt step asking several agents the same prompt (merge.go)
	Merge     string   `toml:"merge" json:"merge,omitempty" yaml:"merge"`             // how their answers become one: concat (default), vote, judge
	Judge     string   `toml:"judge" json:"judge,omitempty" yaml:"judge"`             // merge = "judge": the agent that merges them
	Approval  string   `toml:"approval" json:"approval,omitempty" yaml:"approval"`    // an approval step: the question a human answers
	Workflow  string   `toml:"workflow" json:"workflow,omitempty" yaml:"workflow"`    // a sub-workflow step: its arguments are the sub-workflow's inputs
	DependsOn []string `toml:"depends_on" json:"depends_on,omitempty" yaml:"depends_on"`
	If        string   `toml:"if" json:"if,omitempty" yaml:"if"`                   // CEL, must be true for the step to run
	ForEach   string   `toml:"for_each" json:"for_each,omitempty" yaml:"for_each"` // CEL list: the step runs once per item
	Retry     int      `toml:"retry" json:"retry,omitempty" yaml:"retry"`          // further attempts after a failed one
	Timeout   string   `toml:"timeout" json:"timeout,omitempty" yaml:"timeout"`    // per attempt, e.g. "30s"
	Output    string   `toml:"output" json:"output,omitempty" yaml:"output"`       // names the step's output among the run's outputs
}

// Table is a TOML table kept as plain values (a JSON Schema, a tool's arguments): the
// manifest's strict decoding checks its keys no further.
type Table map[string]any

// UnmarshalTOML implements toml.Unmarshaler.
func (t *Table) UnmarshalTOML(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("must be a table, not %T", v)
	}
	*t = m
	return nil
}

// Kind is "tool", "agent", "workflow" or "approval".
func (s Step) Kind() string {
	switch {
	case s.Tool != "":
		return "tool"
	case s.Prompt != "":
		return "agent"
	case s.Workflow != "":
		return "workflow"
	}
	return "approval"
}

// KeyError is a problem at a key of the definition, relative to the workflow's table:
// "steps.2.if". The host prefixes "workflows.NAME." and finds the line.
type KeyError struct {
	Key string
	Msg string
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Msg }

func keyErr(key, format string, args ...any) error {
	return &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Workflow is a compiled definition: expressions parsed and checked, steps in an order
// that puts every step after its dependencies.
type Workflow struct {
	Name    string
	Def     Definition
	steps   []*cstep // in Def.Steps order
	byID    map[string]*cstep
	inputs  *loop.Schema
	maxPar  int
	outputs bool                 // some step names an output
	subs    map[string]*Workflow // the workflows its workflow steps run, set by Link
}

type cstep struct {
	Step
	index   int
	deps    []string // explicit and implied by references, deduplicated, in order
	cond    cel.Program
	forEach cel.Program
	args    any      // Arguments with every ${expr} compiled (template)
	argsB   []byte   // a tool step's arguments as its calls send them, when they have no ${expr}
	prompt  template // Prompt, Approval
	timeout time.Duration
	sink    bool // no step depends on it
}

var idRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Compile checks def and compiles its expressions. The error is a *KeyError.
func Compile(name string, def Definition) (*Workflow, error) {
	w := &Workflow{Name: name, Def: def, byID: map[string]*cstep{}, maxPar: def.MaxParallel}
	if err := w.header(); err != nil {
		return nil, err
	}
	for i, s := range def.Steps {
		if err := w.addStep(i, s); err != nil {
			return nil, err
		}
	}
	outNames := map[string]string{}
	for i, cs := range w.steps {
		if err := w.compileStep(fmt.Sprintf("steps.%d", i), cs, outNames); err != nil {
			return nil, err
		}
	}
	if cycle := w.findCycle(); cycle != nil {
		return nil, keyErr(fmt.Sprintf("steps.%d.depends_on", w.byID[cycle[0]].index), "cycle: %s", strings.Join(cycle, " → "))
	}
	for _, cs := range w.steps {
		cs.sink = true
		for _, o := range w.steps {
			if slices.Contains(o.deps, cs.ID) {
				cs.sink = false
			}
		}
	}
	return w, nil
}

// header checks what is not a step: there are steps, max_parallel, the inputs schema.
func (w *Workflow) header() error {
	if len(w.Def.Steps) == 0 {
		return keyErr("steps", "a workflow needs at least one step")
	}
	if w.maxPar < 0 || w.maxPar > 256 {
		return keyErr("max_parallel", "must be between 1 and 256, not %d", w.maxPar)
	}
	if w.maxPar == 0 {
		w.maxPar = 4
	}
	if w.Def.Inputs != nil {
		raw, _ := json.Marshal(w.Def.Inputs)
		s, err := loop.CompileSchema("workflow_"+w.Name, raw)
		if err != nil {
			return keyErr("inputs", "%v", err)
		}
		w.inputs = s
	}
	return nil
}

// addStep checks a step on its own (id, kind, counts, names) and adds it.
func (w *Workflow) addStep(i int, s Step) error {
	key := fmt.Sprintf("steps.%d", i)
	if !idRE.MatchString(s.ID) {
		return keyErr(key+".id", "step id %q must be letters, digits and _ (not starting with a digit): expressions name it as steps.ID", s.ID)
	}
	if _, dup := w.byID[s.ID]; dup {
		return keyErr(key+".id", "duplicate step id %q", s.ID)
	}
	if err := w.checkKind(key, s); err != nil {
		return err
	}
	if s.Retry < 0 || s.Retry > 100 {
		return keyErr(key+".retry", "must be between 0 and 100, not %d", s.Retry)
	}
	if s.Output != "" && !idRE.MatchString(s.Output) {
		return keyErr(key+".output", "output name %q must be letters, digits and _", s.Output)
	}
	cs := &cstep{Step: s, index: i}
	if s.Timeout != "" {
		d, err := time.ParseDuration(s.Timeout)
		if err != nil || d <= 0 {
			return keyErr(key+".timeout", "invalid duration %q (e.g. \"30s\")", s.Timeout)
		}
		cs.timeout = d
	}
	w.byID[s.ID] = cs
	w.steps = append(w.steps, cs)
	w.outputs = w.outputs || s.Output != ""
	return nil
}

// checkKind checks that a step has exactly one kind and only that kind's keys.
func (w *Workflow) checkKind(key string, s Step) error {
	kinds := 0
	for _, set := range []bool{s.Tool != "", s.Prompt != "", s.Approval != "", s.Workflow != ""} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds != 1:
		return keyErr(key, "step %q needs exactly one of tool, prompt (an agent step), approval or workflow (a sub-workflow)", s.ID)
	case s.Arguments != nil && s.Tool == "" && s.Workflow == "":
		return keyErr(key+".arguments", "only a tool or workflow step takes arguments")
	case s.Workflow == w.Name:
		return keyErr(key+".workflow", "workflow %q cannot run itself", w.Name)
	case s.Agent != "" && s.Prompt == "":
		return keyErr(key+".agent", "only a prompt step names an agent")
	}
	return checkMerge(key, s)
}

// compileStep compiles a step's expressions and works out its dependencies: declared,
// then implied by references, in step order.
func (w *Workflow) compileStep(key string, cs *cstep, outNames map[string]string) error {
	if cs.Output != "" {
		if other, dup := outNames[cs.Output]; dup {
			return keyErr(key+".output", "output %q is also step %q's", cs.Output, other)
		}
		outNames[cs.Output] = cs.ID
	}
	refs := map[string]bool{}
	for j, d := range cs.DependsOn {
		if _, ok := w.byID[d]; !ok {
			return keyErr(key+".depends_on", "unknown step %q (depends_on[%d])", d, j)
		}
		refs[d] = true
	}
	if err := w.compileExprs(key, cs, refs); err != nil {
		return err
	}
	if refs[cs.ID] {
		return keyErr(key, "step %q depends on itself", cs.ID)
	}
	for _, d := range cs.DependsOn { // explicit order first, then implied
		if refs[d] {
			cs.deps = append(cs.deps, d)
			delete(refs, d)
		}
	}
	for _, o := range w.steps {
		if refs[o.ID] {
			cs.deps = append(cs.deps, o.ID)
		}
	}
	return nil
}

// compileExprs compiles a step's if, for_each, arguments and prompt, adding the steps
// they refer to to refs.
func (w *Workflow) compileExprs(key string, cs *cstep, refs map[string]bool) error {
	var err error
	if cs.If != "" {
		if cs.cond, err = compileExpr(cs.If, cs.ForEach != ""); err != nil {
			return keyErr(key+".if", "%v", err)
		}
		if err := w.refsIn(cs.If, refs); err != nil {
			return keyErr(key+".if", "%v", err)
		}
	}
	if cs.ForEach != "" {
		if cs.forEach, err = compileExpr(cs.ForEach, false); err != nil {
			return keyErr(key+".for_each", "%v", err)
		}
		if err := w.refsIn(cs.ForEach, refs); err != nil {
			return keyErr(key+".for_each", "%v", err)
		}
	}
	item := cs.ForEach != ""
	if cs.args, err = compileValue(map[string]any(cs.Arguments), item, func(expr string) error { return w.refsIn(expr, refs) }); err != nil {
		return keyErr(key+".arguments", "%v", err)
	}
	if cs.Tool != "" && !hasTemplate(cs.args) {
		cs.argsB, _ = argsJSON(cs.args, nil) // fixed: encoded once, not at every call (nil: encoded then)
	}
	text := cs.Prompt + cs.Approval
	field := map[bool]string{true: "prompt", false: "approval"}[cs.Prompt != ""]
	if cs.prompt, err = compileTemplate(text, item); err != nil {
		return keyErr(key+"."+field, "%v", err)
	}
	if err := w.refsIn(text, refs); err != nil {
		return keyErr(key+"."+field, "%v", err)
	}
	return nil
}

var stepRefRE = regexp.MustCompile(`\bsteps\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)|\bsteps\s*\[\s*["']([^"']*)["']`)

// refsIn adds the steps expr refers to (steps.ID, steps["ID"]) to refs; a reference
// to an unknown step is an error. A reference implies a dependency: the step cannot run
// before the output it reads exists.
func (w *Workflow) refsIn(expr string, refs map[string]bool) error {
	for _, m := range stepRefRE.FindAllStringSubmatch(expr, -1) {
		id := m[1] + m[2]
		if _, ok := w.byID[id]; !ok {
			return fmt.Errorf("unknown step %q in %q", id, expr)
		}
		refs[id] = true
	}
	return nil
}

// findCycle returns the steps of a dependency cycle, first repeated at the end, or nil.
func (w *Workflow) findCycle() []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var visit func(id string) []string
	visit = func(id string) []string {
		color[id] = grey
		stack = append(stack, id)
		for _, d := range w.byID[id].deps {
			switch color[d] {
			case grey:
				i := slices.Index(stack, d)
				return append(slices.Clone(stack[i:]), d)
			case white:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return nil
	}
	for _, cs := range w.steps {
		if color[cs.ID] == white {
			if c := visit(cs.ID); c != nil {
				return c
			}
		}
	}
	return nil
}

// Tools lists the tool steps' tool names with their keys ("steps.1.tool"), for the host
// to check against the loaded tools once the plugins are up.
func (w *Workflow) Tools() map[string]string {
	out := map[string]string{}
	for i, cs := range w.steps {
		if cs.Tool != "" {
			out[fmt.Sprintf("steps.%d.tool", i)] = cs.Tool
		}
	}
	return out
}

// Workflows lists the sub-workflow steps' workflow names with their keys
// ("steps.1.workflow"), for the host to check that they exist and form no cycle.
func (w *Workflow) Workflows() map[string]string {
	out := map[string]string{}
	for i, cs := range w.steps {
		if cs.Workflow != "" {
			out[fmt.Sprintf("steps.%d.workflow", i)] = cs.Workflow
		}
	}
	return out
}

// HasApproval says some step is an approval step.
func (w *Workflow) HasApproval() bool {
	for _, cs := range w.steps {
		if cs.Approval != "" {
			return true
		}
	}
	return false
}

// Agents lists the prompt steps' agent names with their keys ("steps.1.agent").
func (w *Workflow) Agents() map[string]string {
	out := map[string]string{}
	for i, cs := range w.steps {
		if cs.Agent != "" {
			out[fmt.Sprintf("steps.%d.agent", i)] = cs.Agent
		}
		mergeAgents(out, i, cs.Step)
	}
	return out
}

// UsesAgent says some step, or a step of a sub-workflow, is a prompt step: running the
// workflow needs a provider.
func (w *Workflow) UsesAgent() bool {
	for _, cs := range w.steps {
		if cs.Prompt != "" {
			return true
		}
		if sub := w.subs[cs.Workflow]; sub != nil && sub.UsesAgent() {
			return true
		}
	}
	return false
}

// GraphStep is a step as the console draws it: its kind, what it runs and the steps it
// waits for (declared and implied by references).
type GraphStep struct {
	ID        string   `json:"id"`
	Kind      string   `json:"kind"`
	Runs      string   `json:"runs,omitempty"` // the tool, agent or sub-workflow
	DependsOn []string `json:"depends_on"`
	If        string   `json:"if,omitempty"`
	ForEach   string   `json:"for_each,omitempty"`
	Output    string   `json:"output,omitempty"`
}

// Graph lists the steps with their dependencies, in definition order.
func (w *Workflow) Graph() []GraphStep {
	out := make([]GraphStep, len(w.steps))
	for i, cs := range w.steps {
		out[i] = GraphStep{ID: cs.ID, Kind: cs.Kind(), Runs: cs.Tool + cs.Agent + cs.Workflow, DependsOn: append([]string{}, cs.deps...),
			If: cs.If, ForEach: cs.ForEach, Output: cs.Output}
	}
	return out
}

// StepIDs lists the steps in definition order.
func (w *Workflow) StepIDs() []string {
	out := make([]string, len(w.steps))
	for i, cs := range w.steps {
		out[i] = cs.ID
	}
	return out
}
