package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// evalEnv is a manifest like testdata/evals/agent.toml, in a temporary directory, with
// the repository's example dataset and model stories plus the test's own.
func evalEnv(t *testing.T, extraStories string) *agentEnv {
	t.Helper()
	grader := filepath.Join(repoRoot, "plugins/examples/go/keyword_grader/keyword_grader.wasm")
	if _, err := os.Stat(grader); err != nil {
		cmd := exec.Command("bash", "scripts/plugins.d/examples.sh", "keyword_grader")
		cmd.Dir = repoRoot
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build keyword_grader: %v\n%s", err, b)
		}
	}
	dir := t.TempDir()
	model := string(must(os.ReadFile(filepath.Join(repoRoot, "testdata/evals/model.json"))))
	model = strings.Replace(model, `{"stories": [`, `{"stories": [`+extraStories, 1)
	os.WriteFile(filepath.Join(dir, "model.json"), []byte(model), 0o644)
	manifest := fmt.Sprintf(`[agent]
name = "assistant"
provider = "scripted"
model = "demo"
[providers.scripted]
command = %q
options = { script = "model.json" }
[store]
kind = "sqlite"
path = "sessions.db"
[[plugins]]
name = "calc"
wasm = %q
[[plugins]]
name = "keywords"
kind = "evaluator"
wasm = %q
`, filepath.Join(binDir, "agenthost-provider-scripted"), calcWasm, grader)
	e := &agentEnv{dir: dir, manifest: filepath.Join(dir, "agent.toml")}
	os.WriteFile(e.manifest, []byte(manifest), 0o644)
	return e
}

type junitSuite struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Cases    []struct {
		Name    string `xml:"name,attr"`
		Failure *struct {
			Message string `xml:"message,attr"`
		} `xml:"failure"`
	} `xml:"testcase"`
}

func readJUnit(t *testing.T, path string) junitSuite {
	t.Helper()
	var s junitSuite
	if err := xml.Unmarshal(must(os.ReadFile(path)), &s); err != nil {
		t.Fatalf("JUnit %s: %v", path, err)
	}
	return s
}

// The example dataset passes offline (a real Wasm tool, a Wasm grader, a scripted model
// judge); a dataset with a failing case exits 1 and says why in the table, the JUnit
// file and the HTML report, whose transcript escapes the model's markup; against the
// passing run as a baseline, the failure is a regression.
func TestE2E_EvalGradesCasesAndFlagsRegressions(t *testing.T) {
	e := evalEnv(t, `{"when": "Say hello", "turns": [{"text": "<script>alert(1)</script> hello"}]},
	  {"when": "The answer is in Rome", "turns": [{"text": "{\"pass\": false, \"score\": 0.2, \"reason\": \"not Rome\"}"}]},`)
	example := filepath.Join(repoRoot, "testdata/evals/example.jsonl")
	base := filepath.Join(e.dir, "base.json")
	r := e.agenthost(t, "eval", example, "--json", "--parallel", "2")
	if r.code != 0 {
		t.Fatalf("example: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(base, []byte(r.stdout), 0o644)
	var rep struct {
		Passed int `json:"passed"`
		Cases  []struct {
			ID     string `json:"id"`
			Grades []struct {
				Grader string  `json:"grader"`
				Pass   bool    `json:"pass"`
				Score  float64 `json:"score"`
			} `json:"grades"`
		} `json:"cases"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Passed != 3 {
		t.Fatalf("example report: %v %s", err, r.stdout)
	}
	grades := map[string]string{}
	for _, c := range rep.Cases {
		for _, g := range c.Grades {
			grades[c.ID] += fmt.Sprintf("%s %v %g;", g.Grader, g.Pass, g.Score)
		}
	}
	if grades["arithmetic"] != "plugin:keywords true 1;" || grades["capital"] != "judge true 1;" {
		t.Fatalf("grades = %v", grades)
	}

	// The same ids, now with one case that fails each way.
	failing := filepath.Join(e.dir, "failing.jsonl")
	os.WriteFile(failing, []byte(strings.Join([]string{
		`{"id": "arithmetic", "input": {"prompt": "What is 17*23?"}, "expect": {"contains": ["392"]}, "graders": [{"plugin": "keywords", "config": {"required": "391, Rome"}}]}`,
		`{"id": "capital", "input": {"prompt": "What is the capital of France?"}, "graders": [{"rubric": "The answer is in Rome."}]}`,
		`{"id": "structured", "input": {"prompt": "Say hello"}, "expect": {"tools": [{"name": "calc"}]}}`,
	}, "\n")), 0o644)
	junit, html := filepath.Join(e.dir, "eval.xml"), filepath.Join(e.dir, "eval.html")
	// Durations are wall-clock: on a loaded machine the mean can double, which is a real
	// regression for the tool but not what this test is about (eval tests it).
	r = e.agenthost(t, "eval", failing, "--baseline", base, "--junit", junit, "--html", html, "--max-latency-increase", "1000")
	if r.code != 1 {
		t.Fatalf("failing: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`arithmetic  FAIL`, `the final text does not contain "392" (+1 more)`,
		`regression: pass rate 0.0%, baseline 100.0%`, `regression: case capital passed in the baseline and fails now`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	s := readJUnit(t, junit)
	if s.Tests != 7 || s.Failures != 7 || len(s.Cases) != 7 { // 3 cases + 4 regressions
		t.Fatalf("JUnit: %+v", s)
	}
	msgs := map[string]string{}
	for _, c := range s.Cases {
		if c.Failure != nil {
			msgs[c.Name] = c.Failure.Message
		}
	}
	if msgs["capital"] != "grader judge: score 0.2, not Rome" || msgs["structured"] != "no call of calc with arguments null (calls: none)" ||
		msgs["arithmetic"] != `the final text does not contain "392"` {
		t.Fatalf("JUnit failures: %q", msgs)
	}
	page := string(must(os.ReadFile(html)))
	if strings.Contains(page, "<script>alert(1)") || !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt; hello") ||
		!strings.Contains(page, "grader plugin:keywords: score 0.5, missing: Rome") {
		t.Fatalf("HTML report:\n%s", page)
	}
}

// A dataset that cannot be read is a usage error naming the file and the line; nothing
// runs.
func TestE2E_EvalRefusesABadDatasetNamingTheLine(t *testing.T) {
	e := evalEnv(t, "")
	for name, c := range map[string]struct{ file, body, want string }{
		"syntax":   {"d.jsonl", `{"id": "a", "input": {"prompt": "x"}}` + "\n\n" + `{"id": "b", "input": {"prompt": "x"}`, "d.jsonl: line 3: unexpected EOF"},
		"unknown":  {"d.jsonl", `{"id": "a", "input": {"prompt": "x"}, "expect": {"containz": ["x"]}}`, `line 1: json: unknown field "containz"`},
		"dup":      {"d.jsonl", `{"id": "a", "input": {"prompt": "x"}}` + "\n" + `{"id": "a", "input": {"prompt": "y"}}`, `line 2: id "a" is also case 1's`},
		"utf8":     {"d.jsonl", "{\"id\": \"a\xff\", \"input\": {\"prompt\": \"x\"}}", "line 1: not valid UTF-8"},
		"huge":     {"d.jsonl", `{"id": "a", "input": {"prompt": "` + strings.Repeat("x", 1<<20) + `"}}`, "line 1: longer than 1048576 bytes"},
		"regexp":   {"d.yaml", "- id: a\n  input: {prompt: x}\n  expect: {matches: '('}\n", "case 1: case \"a\": matches: error parsing regexp"},
		"grader":   {"d.yaml", "- id: a\n  input: {prompt: x}\n  graders: [{}]\n", "graders[0]: give a plugin or a rubric"},
		"no cases": {"d.jsonl", "# nothing\n", "d.jsonl: no cases"},
	} {
		path := filepath.Join(e.dir, c.file)
		os.WriteFile(path, []byte(c.body), 0o644)
		r := e.agenthost(t, "eval", path)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Fatalf("%s: exit %d, stderr %.300s; want %q", name, r.code, r.stderr, c.want)
		}
	}
	if r := e.agenthost(t, "eval", "--approve", "ask", filepath.Join(repoRoot, "testdata/evals/example.jsonl")); r.code != 2 || !strings.Contains(r.stderr, "no one is there to ask") {
		t.Fatalf("--approve ask: exit %d %s", r.code, r.stderr)
	}
}
