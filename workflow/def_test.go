package workflow

import (
	"errors"
	"strings"
	"testing"
)

func tool(id, name string, args map[string]any, deps ...string) Step {
	return Step{ID: id, Tool: name, Arguments: args, DependsOn: deps}
}

func TestCompile_RefusesBrokenDefinitionsNamingTheKey(t *testing.T) {
	cases := []struct {
		name string
		def  Definition
		key  string
		msg  string
	}{
		{"cycle", Definition{Steps: []Step{tool("a", "t", nil, "b"), tool("b", "t", nil, "a")}}, "steps.0.depends_on", "cycle: a → b → a"},
		{"cycle through a reference", Definition{Steps: []Step{
			tool("a", "t", map[string]any{"x": "${steps.b.output}"}), tool("b", "t", nil, "a")}}, "steps.0.depends_on", "cycle"},
		{"unknown dependency", Definition{Steps: []Step{tool("a", "t", nil, "nope")}}, "steps.0.depends_on", `unknown step "nope"`},
		{"unknown step in an expression", Definition{Steps: []Step{{ID: "a", Tool: "t", If: "steps.ghost.output > 1"}}}, "steps.0.if", `unknown step "ghost"`},
		{"if does not compile", Definition{Steps: []Step{{ID: "a", Tool: "t", If: "inputs.x >"}}}, "steps.0.if", "does not compile"},
		{"argument does not compile", Definition{Steps: []Step{tool("a", "t", map[string]any{"n": map[string]any{"deep": "${1 +}"}})}}, "steps.0.arguments", "n: "},
		{"item outside for_each", Definition{Steps: []Step{tool("a", "t", map[string]any{"x": "${item}"})}}, "steps.0.arguments", "undeclared reference to 'item'"},
		{"unclosed reference", Definition{Steps: []Step{{ID: "a", Prompt: "hello ${inputs.x"}}}, "steps.0.prompt", "unclosed ${"},
		{"two kinds", Definition{Steps: []Step{{ID: "a", Tool: "t", Prompt: "p"}}}, "steps.0", "exactly one of"},
		{"bad id", Definition{Steps: []Step{tool("a-b", "t", nil)}}, "steps.0.id", "letters, digits"},
		{"duplicate id", Definition{Steps: []Step{tool("a", "t", nil), tool("a", "t", nil)}}, "steps.1.id", "duplicate"},
		{"bad timeout", Definition{Steps: []Step{{ID: "a", Tool: "t", Timeout: "soon"}}}, "steps.0.timeout", "invalid duration"},
		{"bad inputs schema", Definition{Inputs: map[string]any{"type": 5}, Steps: []Step{tool("a", "t", nil)}}, "inputs", ""},
		{"no steps", Definition{}, "steps", "at least one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile("w", c.def)
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("err = %v, want a KeyError", err)
			}
			if ke.Key != c.key || !strings.Contains(ke.Msg, c.msg) {
				t.Fatalf("err = %q, want key %q and message containing %q", err, c.key, c.msg)
			}
		})
	}
}

func TestCompile_ReferencesImplyDependencies(t *testing.T) {
	w, err := Compile("w", Definition{Steps: []Step{
		tool("report", "t", map[string]any{"x": "${steps.analyse.output}", "y": "${steps.collect.output}"}, "collect"),
		{ID: "analyse", Tool: "t", ForEach: "steps.collect.output"},
		tool("collect", "t", nil),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(w.byID["report"].deps, ","); got != "collect,analyse" {
		t.Fatalf("report deps = %s, want collect,analyse", got)
	}
	if got := strings.Join(w.byID["analyse"].deps, ","); got != "collect" {
		t.Fatalf("analyse deps = %s", got)
	}
	if !w.byID["report"].sink || w.byID["collect"].sink {
		t.Fatal("report should be the only sink")
	}
}

func TestTemplate_WholeReferenceKeepsItsTypeAndMixedTextIsAString(t *testing.T) {
	vars := map[string]any{"inputs": map[string]any{"n": []any{1.0, 2.0}, "s": "x"}, "steps": map[string]any{}}
	whole, err := compileTemplate("${inputs.n}", false)
	if err != nil {
		t.Fatal(err)
	}
	v, err := whole.eval(vars)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := v.([]any); !ok || len(l) != 2 {
		t.Fatalf("whole = %#v, want the list", v)
	}
	mixed, _ := compileTemplate(`n=${inputs.n} s=${inputs.s} m=${ {"k": 1}.k } $${lit}`, false)
	v, err = mixed.eval(vars)
	if err != nil {
		t.Fatal(err)
	}
	if v != `n=[1,2] s=x m=1 ${lit}` {
		t.Fatalf("mixed = %q", v)
	}
}

// An expression's work is bounded: a run's inputs cannot make one run without end.
func TestExpressionsHaveACostLimit(t *testing.T) {
	tp, err := compileTemplate("${lists.range(int(inputs.n)).map(x, lists.range(int(inputs.n)).size()).size()}", false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tp.eval(map[string]any{"inputs": map[string]any{"n": 100000.0}, "steps": map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Fatalf("err = %v", err)
	}
}
