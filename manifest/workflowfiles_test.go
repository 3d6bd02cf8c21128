package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// workflowDir writes a manifest with workflow_files = ["flows/*"] and the given files.
func workflowDir(t *testing.T, manifestExtra string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "flows"), 0o755))
	for name, body := range files {
		must(t, os.WriteFile(filepath.Join(dir, "flows", name), []byte(body), 0o644))
	}
	p := filepath.Join(dir, "agent.toml")
	must(t, os.WriteFile(p, []byte("workflow_files = [\"flows/*\"]\n"+wfBase+manifestExtra), 0o644))
	return p
}

func TestWorkflowFilesInYAMLJSONAndTOMLDeclareTheSameWorkflow(t *testing.T) {
	p := workflowDir(t, "", map[string]string{
		"sales.yaml": `description: totals
inputs: {type: object, properties: {n: {type: integer}}}
steps:
  - id: collect
    tool: calc
    arguments: {expression: "${string(inputs.n)} + 1", limit: 3}
  - id: report
    workflow: tally
    arguments: {value: "${steps.collect.output}"}
`,
		"tally.json": `{"name": "tally", "steps": [{"id": "t", "tool": "calc", "arguments": {"expression": "1"}}]}`,
		"other.toml": "name = \"other\"\n[[steps]]\nid = \"x\"\ntool = \"calc\"\n",
	})
	m, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.WorkflowNames(), ","); got != "other,sales,tally" {
		t.Fatalf("workflows %s", got)
	}
	w, _ := m.Workflow("sales")
	if w.Def.Description != "totals" || w.Def.Steps[1].Workflow != "tally" {
		t.Fatalf("sales %+v", w.Def)
	}
	// YAML numbers become what TOML gives: int64.
	if v, ok := w.Def.Steps[0].Arguments["limit"].(int64); !ok || v != 3 {
		t.Fatalf("limit %T %v", w.Def.Steps[0].Arguments["limit"], w.Def.Steps[0].Arguments["limit"])
	}
	if w.UsesAgent() {
		t.Fatal("no prompt step anywhere")
	}
}

func TestWorkflowFileErrorsNameTheFileLineAndKey(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"unknown key in YAML", map[string]string{"a.yaml": "steps:\n  - id: a\n    tool: calc\n    retries: 2\n"},
			`a.yaml:4: (workflow): line 4: field retries not found`},
		{"cycle in YAML", map[string]string{"a.yml": "steps:\n  - id: a\n    tool: calc\n    depends_on: [b]\n  - id: b\n    tool: calc\n    depends_on: [a]\n"},
			`a.yml:4: steps[0].depends_on: cycle: a → b → a`},
		{"expression in JSON", map[string]string{"a.json": "{\n \"steps\": [\n  {\"id\": \"a\",\n   \"tool\": \"calc\",\n   \"if\": \"inputs.n >\"}\n ]\n}\n"},
			`a.json:5: steps[0].if: expression "inputs.n >" does not compile`},
		{"unknown key in TOML", map[string]string{"a.toml": "[[steps]]\nid = \"a\"\ntool = \"calc\"\nretries = 2\n"},
			`a.toml:4: steps.retries: unknown key`},
		{"YAML syntax", map[string]string{"a.yaml": "steps:\n  - id: a\n   tool: [\n"}, `a.yaml:1: (syntax): line 1: did not find expected '-' indicator`},
		{"sub-workflow cycle across files", map[string]string{
			"a.yaml": "steps:\n  - id: s\n    workflow: b\n",
			"b.yaml": "steps:\n  - id: t\n    tool: calc\n  - id: s\n    workflow: a\n"},
			`a.yaml:3: steps[0].workflow: workflows run each other in a cycle: a → b → a`},
		{"unknown sub-workflow", map[string]string{"a.yaml": "steps:\n  - id: s\n    workflow: ghost\n"},
			`a.yaml:3: steps[0].workflow: unknown workflow "ghost" (workflows: a)`},
		{"a name twice", map[string]string{"a.yaml": "steps: [{id: s, tool: calc}]\n", "b.yaml": "name: a\nsteps: [{id: s, tool: calc}]\n"},
			`b.yaml:1: name: workflow "a" is also declared in`},
		{"bad name", map[string]string{"a.yaml": "name: \"a/../b\"\nsteps: [{id: s, tool: calc}]\n"}, `a.yaml:1: name: a workflow name must be`},
		{"non-string key", map[string]string{"a.yaml": "steps:\n  - id: s\n    tool: calc\n    arguments: {1: x}\n"}, `a.yaml:4: (workflow): line 4: key 1 is not a string`},
		{"other format", map[string]string{"a.xml": "<steps/>"}, `a.xml: (file): a workflow file is .yaml, .yml, .json or .toml, not ".xml"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(workflowDir(t, "", c.files))
			var me *Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want a ManifestError", err)
			}
			if got := filepath.Base(me.File) + strings.TrimPrefix(err.Error(), me.File); !strings.HasPrefix(got, c.want) {
				t.Fatalf("err = %q\nwant prefix %q", got, c.want)
			}
		})
	}
}

func TestWorkflowFilesClashWithTheManifestAndEmptyGlobs(t *testing.T) {
	p := workflowDir(t, "[workflows.a]\n[[workflows.a.steps]]\nid = \"s\"\ntool = \"calc\"\n", map[string]string{"a.yaml": "steps: [{id: s, tool: calc}]\n"})
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), `workflow "a" is also declared in`) || !strings.Contains(err.Error(), "agent.toml") {
		t.Fatalf("err = %v", err)
	}
	p = workflowDir(t, "", nil)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), `agent.toml:1: workflow_files[0]: "flows/*" matches no file`) {
		t.Fatalf("err = %v", err)
	}
	huge := strings.Repeat("#", maxWorkflowFile+1)
	p = workflowDir(t, "", map[string]string{"h.yaml": huge})
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v", err)
	}
}
