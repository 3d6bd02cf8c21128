package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A YAML dataset reads like its JSONL twin: the same fields, numbers that compare equal
// to JSON's in argument subsets.
func TestYAMLDatasetsReadLikeJSONL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.yaml")
	os.WriteFile(path, []byte(`
- id: sum
  input: {prompt: "What is 2+3?", user: ana}
  expect:
    contains: ["5"]
    tools: [{name: calc, args: {a: 2, opts: {exact: true}}}]
    max_steps: 3
`), 0o644)
	cases, err := Load(path)
	if err != nil || len(cases) != 1 {
		t.Fatalf("Load: %v %+v", err, cases)
	}
	c := cases[0]
	if c.ID != "sum" || c.Input.User != "ana" || c.Expect.MaxSteps != 3 || c.Expect.Tools[0].Name != "calc" {
		t.Fatalf("case = %+v", c)
	}
	o := Outcome{Status: "completed", Final: "5", Calls: []ToolCall{{Name: "calc", Args: map[string]any{"a": 2.0, "b": 3.0, "opts": map[string]any{"exact": true, "x": 1.0}}}}}
	if f := c.Expect.failures(o); len(f) != 0 {
		t.Fatalf("failures = %q", f)
	}
}

// Expected calls match by name and argument subset; in order, each must come after the
// one before it.
func TestExpectedToolCallsMatchInOrder(t *testing.T) {
	calls := []ToolCall{{Name: "search", Args: map[string]any{"q": "tea"}}, {Name: "fetch"}, {Name: "search", Args: map[string]any{"q": "milk"}}}
	x := Expect{Tools: []ToolCall{{Name: "fetch"}, {Name: "search", Args: map[string]any{"q": "tea"}}}}
	if f := x.toolFailures(calls); len(f) != 0 {
		t.Fatalf("unordered: %q", f)
	}
	x.ToolsInOrder = true
	f := x.toolFailures(calls)
	if len(f) != 1 || !strings.Contains(f[0], `no call of search with arguments {"q":"tea"} after the previous expected call`) {
		t.Fatalf("ordered: %q", f)
	}
	if f := (Expect{NoTools: true}).toolFailures(calls); len(f) != 1 || f[0] != "3 tool calls, want none (first: search)" {
		t.Fatalf("no_tools: %q", f)
	}
}

// Cost and duration regress only past the tolerance.
func TestBaselineToleratesWhatItIsTold(t *testing.T) {
	base := newReport("d", []Result{{ID: "a", Pass: true, CostUSD: 1, DurationMS: 100}})
	now := newReport("d", []Result{{ID: "a", Pass: true, CostUSD: 1.19, DurationMS: 149}})
	now.Compare(base, Tolerance{Cost: 0.2, Latency: 0.5})
	if len(now.Regressions) != 0 {
		t.Fatalf("within tolerance: %q", now.Regressions)
	}
	now = newReport("d", []Result{{ID: "a", Pass: true, CostUSD: 1.3, DurationMS: 200}})
	now.Compare(base, Tolerance{Cost: 0.2, Latency: 0.5})
	if len(now.Regressions) != 2 || !strings.HasPrefix(now.Regressions[0], "cost $1.300000, baseline $1.000000 (+30%") ||
		!strings.HasPrefix(now.Regressions[1], "mean duration 200 ms, baseline 100 ms (+100%") {
		t.Fatalf("over tolerance: %q", now.Regressions)
	}
}
