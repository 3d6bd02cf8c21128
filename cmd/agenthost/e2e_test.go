package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/ociplugin/keyless"
	"github.com/agenthost/agenthost/store/pgtest"
)

// The end-to-end tests build the real binaries (the host and the scripted provider) and
// drive them as a user would, with fixtures and the calc Wasm plugin built from source.
var (
	binDir   string
	repoRoot string
	calcWasm string
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	var err error
	repoRoot, err = filepath.Abs("../..")
	if err != nil {
		panic(err)
	}
	// agenthost, the scripted adapter and the keyless verifier side by side in testbin's
	// directory, where the other binaries tests build (the openai adapter, mcpecho, test
	// plugins) join them.
	defer testbin.Cleanup()
	defer pgtest.Stop()      // the PostgreSQL server, if a test started one
	testbin.ShareWasmCache() // every agenthost the tests start compiles a module once, not once per test
	for _, b := range []testbin.Bin{testbin.Agenthost, testbin.Scripted, testbin.Sigstore} {
		if _, err := testbin.Build(b); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if binDir, err = testbin.Dir(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// This process attaches bundles itself (checkSignedImage): its helper is the one built
	// beside agenthost, not one beside the test binary.
	keyless.HelperPath = filepath.Join(binDir, keyless.HelperName)
	calcWasm = filepath.Join(repoRoot, "plugins/examples/go/calc/calc.wasm")
	if _, err := os.Stat(calcWasm); err != nil { // `make test` builds it first; `go test` alone builds it here
		cmd := exec.Command("bash", "scripts/plugins.sh")
		cmd.Dir = repoRoot
		if b, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build plugins: %v\n%s", err, b)
			return 1
		}
	}
	return m.Run()
}

// agentEnv is a directory with a manifest, its fixtures and a SQLite store.
type agentEnv struct {
	dir, manifest string
}

// newEnv writes a manifest. agentExtra is added to [agent]; scripts maps provider
// names to fixtures (the first is the agent's provider).
func newEnv(t *testing.T, agentExtra, policyExtra string, scripts ...[2]string) *agentEnv {
	t.Helper()
	dir := t.TempDir()
	var providers strings.Builder
	for _, s := range scripts {
		p := filepath.Join(dir, s[0]+".json")
		if err := os.WriteFile(p, []byte(s[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&providers, "[providers.%s]\ncommand = %q\noptions = { script = %q }\n\n", s[0],
			filepath.Join(binDir, "agenthost-provider-scripted"), s[0]+".json")
	}
	manifest := fmt.Sprintf(`[agent]
name = "e2e"
system_prompt = "You compute."
provider = %q
model = "demo"
%s
[agent.retry]
base_delay = "5ms"
[agent.tool_policy]
%s

%s
[store]
kind = "sqlite"
path = "sessions.db"

[[plugins]]
name = "calc"
wasm = %q
[plugins.permissions]
timeout = "5s"
`, scripts[0][0], agentExtra, policyExtra, providers.String(), calcWasm)
	p := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(p, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return &agentEnv{dir: dir, manifest: p}
}

// result of one command.
type result struct {
	stdout, stderr string
	code           int
}

func (e *agentEnv) agenthost(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), append([]string{"-c", e.manifest}, args...)...)
	cmd.Dir = e.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// events parses JSON Lines output.
func events(t *testing.T, s string) []loop.Event {
	t.Helper()
	var out []loop.Event
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e loop.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("bad event line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// shape renders events without deltas, as in the loop's tests.
func shape(evs []loop.Event) []string {
	var out []string
	for _, e := range evs {
		switch d := e.Data.(type) {
		case *loop.ModelDeltaData:
		case *loop.StatusData:
			out = append(out, "status:"+string(d.State))
		case *loop.ToolResultData:
			out = append(out, fmt.Sprintf("tool_result:%s=%s", d.ID, d.Content))
		case *loop.ErrorData:
			out = append(out, "error:"+d.Kind)
		case *loop.FinalData:
			out = append(out, "final:"+d.Text)
		case *loop.RunFinishedData:
			out = append(out, "run_finished:"+string(d.Status)+"/"+string(d.Reason))
		default:
			out = append(out, string(e.Type))
		}
	}
	return out
}

func equalStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func sessionOf(t *testing.T, evs []loop.Event) string {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	return evs[0].SessionID
}

const multiStep = `{"turns": [
  {"expect": {"last_role": "user", "tools_offered": true, "contains": "17*23"},
   "reasoning": "two products", "text": "Computing.",
   "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"17*23\"}"},
                  {"id": "c2", "name": "calc", "arguments": "{\"expression\":\"19*29\"}"}]},
  {"error": {"kind": "rate_limit", "message": "slow down", "retry_after_ms": 30}},
  {"expect": {"last_role": "tool"},
   "tool_calls": [{"id": "c3", "name": "calc", "arguments": "{\"expression\":\"391+551\"}"}]},
  {"text": "{{result c1}} + {{result c2}} = {{result c3}}", "chunk": 3}
]}`

func TestE2E_MultiStepRunEventsAreStoredAsEmitted(t *testing.T) {
	e := newEnv(t, "", "max_parallel = 2", [2]string{"scripted", multiStep})
	r := e.agenthost(t, "run", "--json", "What is 17*23 + 19*29?")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	evs := events(t, r.stdout)
	equalStrings(t, "events", shape(evs), []string{
		"run_started", "status:preparing", "status:model_running",
		"reasoning", "text", "assistant_message", "usage",
		"status:tool_running", "step_start", "tool_call", "step_start", "tool_call",
		"tool_result:c1=391", "step_complete", "tool_result:c2=551", "step_complete",
		"status:model_running", "error:rate_limit", "assistant_message", "usage",
		"status:tool_running", "step_start", "tool_call", "tool_result:c3=942", "step_complete",
		"status:model_running", "assistant_message", "usage",
		"final:391 + 551 = 942", "status:completed", "run_finished:completed/end_turn",
	})
	// The text came in deltas of three characters, numbered per call, and the stream's
	// end is a finish delta (the loop's own, seq 0) with the stop reason.
	var deltas []string
	for _, ev := range evs {
		if d, ok := ev.Data.(*loop.ModelDeltaData); ok && d.CallIndex == 3 {
			deltas = append(deltas, fmt.Sprintf("%d:%s", d.Seq, d.Text))
		}
	}
	equalStrings(t, "final deltas", deltas, []string{"1:391", "2: + ", "3:551", "4: = ", "5:942", "0:end_turn"})

	// The session stores the same events (deltas aside: their text is in assistant_message).
	show := e.agenthost(t, "sessions", "show", sessionOf(t, evs), "--json")
	if show.code != 0 {
		t.Fatalf("sessions show: exit %d %s", show.code, show.stderr)
	}
	var live []string
	for _, ev := range evs {
		if ev.Type != loop.EventModelDelta {
			b, _ := json.Marshal(ev)
			live = append(live, string(b))
		}
	}
	var stored []string
	for _, ev := range events(t, show.stdout) {
		b, _ := json.Marshal(ev)
		stored = append(stored, string(b))
	}
	equalStrings(t, "stored events", stored, live)

	list := e.agenthost(t, "sessions", "list")
	if !strings.Contains(list.stdout, sessionOf(t, evs)) || list.code != 0 {
		t.Fatalf("sessions list: %q", list.stdout)
	}
}

func TestE2E_UnknownToolIsReportedToTheModel(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "u1", "name": "teleport", "arguments": "{}"}]},
	  {"expect": {"last_role": "tool"}, "text": "The tool said: {{result u1}}"}]}`})
	r := e.agenthost(t, "run", "--json", "go")
	evs := events(t, r.stdout)
	if r.code != 0 || !strings.Contains(strings.Join(shape(evs), "\n"), "final:The tool said: Error: Unknown tool 'teleport'") {
		t.Fatalf("exit %d, events %q", r.code, shape(evs))
	}
}

func TestE2E_DuplicateCallStopsWithAToolsOffSummary(t *testing.T) {
	call := `{"tool_calls": [{"id": "%s", "name": "calc", "arguments": "{\"expression\": \"1+1\"}"}]}`
	e := newEnv(t, "", "max_duplicate_calls = 2", [2]string{"scripted", `{"turns": [` +
		fmt.Sprintf(call, "d1") + "," + fmt.Sprintf(call, "d2") + "," + fmt.Sprintf(call, "d3") + `,
	  {"expect": {"tools_offered": false, "contains": "summarise"}, "text": "I computed 1+1 = 2 twice."}]}`})
	r := e.agenthost(t, "run", "--json", "go")
	evs := events(t, r.stdout)
	s := shape(evs)
	if r.code != 1 || s[len(s)-1] != "run_finished:incomplete/duplicate_tool_call" || s[len(s)-3] != "final:I computed 1+1 = 2 twice." {
		t.Fatalf("exit %d, events %q\n%s", r.code, s, r.stderr)
	}
	if n := strings.Count(strings.Join(s, "\n"), "tool_result:"); n != 2 {
		t.Fatalf("%d tool results, want 2: the third call is not executed", n)
	}
}

func TestE2E_MaxIterationsSummaryOffersNoTools(t *testing.T) {
	e := newEnv(t, "max_iterations = 2", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "m1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]},
	  {"tool_calls": [{"id": "m2", "name": "calc", "arguments": "{\"expression\":\"2+2\"}"}]},
	  {"expect": {"tools_offered": false, "last_role": "user", "contains": "summarise"}, "text": "Got 2 and 4; not finished."}]}`})
	r := e.agenthost(t, "run", "--json", "go")
	s := shape(events(t, r.stdout))
	if r.code != 1 || s[len(s)-1] != "run_finished:incomplete/max_iterations" || s[len(s)-3] != "final:Got 2 and 4; not finished." {
		t.Fatalf("exit %d, events %q\n%s", r.code, s, r.stderr)
	}
}

func TestE2E_ApprovalRejectedWithApproveNone(t *testing.T) {
	e := newEnv(t, "", `require_approval = ["calc"]`, [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "a1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"expect": {"last_role": "tool"}, "text": "Not allowed: {{result a1}}"}]}`})
	r := e.agenthost(t, "run", "--json", "--approve", "none", "go")
	s := strings.Join(shape(events(t, r.stdout)), "\n")
	want := "approval_required\nstatus:awaiting_human\nstatus:tool_running\ntool_result:a1=Error: tool call rejected: rejected by --approve none"
	if r.code != 0 || !strings.Contains(s, want) || !strings.Contains(s, "final:Not allowed: Error: tool call rejected: rejected by --approve none") {
		t.Fatalf("exit %d, events:\n%s", r.code, s)
	}
}

// A run killed with SIGKILL while it waits for an approval leaves a consistent store;
// resuming the session runs only the call without a stored result (L14).
func TestE2E_CrashAndResume(t *testing.T) {
	e := newEnv(t, "", `require_approval = ["calc"]`,
		[2]string{"scripted", `{"turns": [
		  {"tool_calls": [{"id": "k1", "name": "calc", "arguments": "{\"expression\":\"2*21\"}"},
		                  {"id": "k2", "name": "calc", "arguments": "{\"expression\":\"10-3\"}"}]}]}`},
		[2]string{"resume", `{"turns": [
		  {"expect": {"last_role": "tool"}, "text": "{{result k1}} and {{result k2}}"}]}`})
	// First run: k1 is approved by the test, then the host is killed while waiting on k2.
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "--json", "--approve", "ask", "go")
	cmd.Dir = e.dir
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var session string
	var first []string
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		approvals := 0
		for sc.Scan() {
			var ev loop.Event
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			session = ev.SessionID
			first = append(first, shape([]loop.Event{ev})...)
			if ev.Type == loop.EventApproval {
				approvals++
				if approvals == 1 {
					io.WriteString(stdin, "y\n")
				} else {
					cmd.Process.Kill() // SIGKILL while waiting for the second answer
					return
				}
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(readyBound):
		cmd.Process.Kill()
		t.Fatal("first run never asked for the second approval")
	}
	cmd.Wait()
	if !strings.Contains(strings.Join(first, "\n"), "tool_result:k1=42") {
		t.Fatalf("first run events: %q", first)
	}
	// Resume with another provider fixture and approvals on: only k2 runs.
	r := e.agenthost(t, "run", "--json", "--approve", "all", "--provider", "resume", "--session", session)
	s := shape(events(t, r.stdout))
	joined := strings.Join(s, "\n")
	if r.code != 0 || strings.Contains(joined, "tool_result:k1") || !strings.Contains(joined, "tool_result:k2=7") ||
		s[len(s)-3] != "final:42 and 7" {
		t.Fatalf("exit %d, resumed events:\n%s\n%s", r.code, joined, r.stderr)
	}
	// The stored conversation is whole: each call has exactly one result.
	show := e.agenthost(t, "sessions", "show", session)
	for _, id := range []string{"[k1]", "[k2]"} {
		if strings.Count(show.stdout, id) != 1 {
			t.Fatalf("result %s appears %d times:\n%s", id, strings.Count(show.stdout, id), show.stdout)
		}
	}
}

func TestE2E_ExitCodesAndMessages(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"error": {"kind": "auth", "message": "bad key"}}]}`})
	r := e.agenthost(t, "run", "go")
	// The model's error once, then the run's failure in its own words (not the error again).
	if r.code != 1 || !strings.Contains(r.stderr, "! auth: bad key\n! auth: model call failed\nrun failed (error)\n") || strings.Contains(r.stderr, "agenthost:") {
		t.Fatalf("failed run: exit %d, stderr %q", r.code, r.stderr)
	}
	// A manifest error is exit 2 and names file, line and key.
	bad := filepath.Join(e.dir, "bad.toml")
	os.WriteFile(bad, []byte("[agent]\nprovider = \"x\"\nmax_iterations = \"lots\"\n"), 0o644)
	r = e.agenthost(t, "-c", bad, "run", "go")
	if r.code != 2 || !strings.Contains(r.stderr, bad+":3: agent.max_iterations: incompatible types") {
		t.Fatalf("manifest error: exit %d, stderr %q", r.code, r.stderr)
	}
	if r = e.agenthost(t, "run"); r.code != 2 || !strings.Contains(r.stderr, "run needs a PROMPT") {
		t.Fatalf("usage: exit %d %q", r.code, r.stderr)
	}
	if r = e.agenthost(t, "run", "--approve", "maybe", "x"); r.code != 2 {
		t.Fatalf("bad --approve: exit %d", r.code)
	}
	if r = e.agenthost(t, "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "agenthost ") {
		t.Fatalf("version: %q", r.stdout)
	}
}

func TestE2E_TranscriptShowsToolsAndFinal(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", multiStep})
	r := e.agenthost(t, "run", "What is 17*23 + 19*29?")
	if r.code != 0 {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	for i := range lines {
		if j := strings.LastIndex(lines[i], " ("); j > 0 && strings.HasSuffix(lines[i], " ms)") {
			lines[i] = lines[i][:j] // durations vary
		}
	}
	equalStrings(t, "transcript", lines, []string{
		"∴ two products", "Computing.",
		`→ calc [c1] {"expression":"17*23"}`, "← calc [c1] 391", `→ calc [c2] {"expression":"19*29"}`, "← calc [c2] 551",
		`→ calc [c3] {"expression":"391+551"}`, "← calc [c3] 942",
		"391 + 551 = 942"})
	if !strings.Contains(r.stderr, "! rate_limit: slow down (retry after 30ms), retrying") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestE2E_PluginsCommands(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": []}`})
	r := e.agenthost(t, "plugins", "call", "calc", "calc", `{"expression":"(2+3)*4"}`)
	var res struct {
		Content []struct{ Type, Text string }
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.IsError || res.Content[0].Text != "20" {
		t.Fatalf("call: exit %d %q %v", r.code, r.stdout, err)
	}
	r = e.agenthost(t, "plugins", "call", "calc", "calc", `{"expression":"1/0"}`)
	if r.code != 1 || !strings.Contains(r.stdout, `"isError": true`) {
		t.Fatalf("error call: exit %d %q", r.code, r.stdout)
	}
	r = e.agenthost(t, "plugins", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "calc") || !strings.Contains(r.stdout, "mcp") {
		t.Fatalf("list: %q", r.stdout)
	}
	if r = e.agenthost(t, "plugins", "verify"); r.code != 0 || !strings.HasPrefix(r.stdout, "ok  calc (mcp, 1 tool,") {
		t.Fatalf("verify: %q %q", r.stdout, r.stderr)
	}
	if r = e.agenthost(t, "plugins", "inspect", "nope"); r.code != 2 {
		t.Fatalf("inspect nope: exit %d", r.code)
	}
}

func TestE2E_InitWritesALoadableStarter(t *testing.T) {
	dir := t.TempDir()
	e := &agentEnv{dir: dir, manifest: filepath.Join(dir, "agent.toml")}
	if r := e.agenthost(t, "init"); r.code != 0 {
		t.Fatalf("init: %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "init"); r.code != 2 || !strings.Contains(r.stderr, "exists; use --force") {
		t.Fatalf("second init: %d %s", r.code, r.stderr)
	}
	// The starter decodes: its only complaint is the provider binary, not a key.
	r := e.agenthost(t, "sessions", "list")
	if r.code != 0 {
		t.Fatalf("starter manifest does not load: %s", r.stderr)
	}
}

// Ctrl-C (SIGINT) while the model works aborts the run: exit 130, and the session keeps
// everything up to the abort, ending with run_finished{aborted}.
func TestE2E_CtrlCAbortsAndKeepsTheSession(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"delay_ms": 30000, "text": "too late"}]}`})
	lr := e.startRun(t, nil)
	lr.cmd.Process.Signal(os.Interrupt)
	if code := lr.wait(t, nil); code != 130 {
		t.Fatalf("exit %d, want 130", code)
	}
	session := lr.session
	show := e.agenthost(t, "sessions", "show", session, "--json")
	s := shape(events(t, show.stdout))
	if s[len(s)-1] != "run_finished:aborted/cancelled" || s[len(s)-2] != "status:aborted" {
		t.Fatalf("stored events %q", s)
	}
	conv := e.agenthost(t, "sessions", "show", session)
	if !strings.Contains(conv.stdout, "user: hello") {
		t.Fatalf("conversation %q", conv.stdout)
	}
}
