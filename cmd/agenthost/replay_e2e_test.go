package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/loop"
)

// chatServer is a loopback OpenAI-compatible server for a two-call conversation: a
// request with no tool message gets the openai adapter's recorded calc call
// (providers/openai/testdata/tool_call.http: calc {"expression":"17*23"}, id
// call_abc123); one with a tool message gets an answer quoting that result (and
// "Again." when the prompt starts so), streamed in pieces, with usage. It counts the requests it gets.
type chatServer struct {
	URL      string
	requests atomic.Int32
}

func newChatServer(t *testing.T) *chatServer {
	t.Helper()
	s := &chatServer{}
	recorded := filepath.Join(repoRoot, "providers", "openai", "testdata", "tool_call.http")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		result, again := "", ""
		for _, m := range req.Messages {
			if m.Role == "tool" {
				result = fmt.Sprint(m.Content)
			}
			if m.Role == "user" && strings.HasPrefix(fmt.Sprint(m.Content), "Again") {
				again = " Again."
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if result == "" {
			f, err := os.Open(recorded)
			if err != nil {
				http.Error(w, err.Error(), http.StatusTeapot)
				return
			}
			defer f.Close()
			resp, err := http.ReadResponse(bufio.NewReader(f), r)
			if err != nil {
				http.Error(w, err.Error(), http.StatusTeapot)
				return
			}
			defer resp.Body.Close()
			io.Copy(w, resp.Body)
			return
		}
		chunk := func(delta, finish, usage string) {
			fmt.Fprintf(w, `data: {"id":"chatcmpl-R1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":%s,"finish_reason":%s}],"usage":%s}`+"\n\n", delta, finish, usage)
		}
		for _, piece := range []string{"17*23 ", "= " + result, "." + again} {
			b, _ := json.Marshal(map[string]string{"content": piece})
			chunk(string(b), "null", "null")
		}
		chunk("{}", `"stop"`, "null")
		fmt.Fprint(w, `data: {"id":"chatcmpl-R1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":52,"completion_tokens":7,"total_tokens":59}}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// replayEnv is newEnv's manifest (system prompt "You compute.", the calc Wasm plugin)
// with an openai provider talking to a loopback chatServer.
func replayEnv(t *testing.T) (*agentEnv, *chatServer) {
	t.Helper()
	srv := newChatServer(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "never"}]}`})
	appendManifest(t, e.manifest, fmt.Sprintf(`
[providers.openai]
command = %q
model = "gpt-4o-mini"
options = { base_url = "%s/v1", api_key = "k" }
`, testbin.Path(t, testbin.OpenAI), srv.URL))
	return e, srv
}

// replayShape renders a run's stored events with what they carry that a replay must
// repeat: calls and their arguments, results, answers, token counts, the end. The
// model's name (the recorded provider's, the replay's agent.model) and costs (priced by
// model) are left out.
func replayShape(evs []loop.Event) []string {
	var out []string
	for _, e := range evs {
		switch d := e.Data.(type) {
		case *loop.RunStartedData:
			out = append(out, "run_started user="+d.User)
		case *loop.StatusData:
			out = append(out, "status:"+string(d.State))
		case *loop.AssistantMessageData:
			calls, _ := json.Marshal(d.Message.ToolCalls)
			out = append(out, fmt.Sprintf("assistant_message %q %s %s", d.Message.Text(), calls, d.StopReason))
		case *loop.Usage:
			out = append(out, fmt.Sprintf("usage %d+%d=%d", d.PromptTokens, d.CompletionTokens, d.TotalTokens))
		case *loop.ToolCallData:
			out = append(out, fmt.Sprintf("tool_call %s %s %s", d.ID, d.Name, d.Arguments))
		case *loop.ToolResultData:
			out = append(out, fmt.Sprintf("tool_result %s %s %q error=%v", d.ID, d.Name, d.Content, d.IsError))
		case *loop.FinalData:
			out = append(out, fmt.Sprintf("final %q", d.Text))
		case *loop.RunFinishedData:
			out = append(out, fmt.Sprintf("run_finished %s/%s %d tokens, %d model calls, %d tool calls", d.Status, d.Reason,
				d.Usage.TotalTokens, d.Metrics.ModelCalls, d.Metrics.ToolCalls))
		default:
			out = append(out, string(e.Type))
		}
	}
	return out
}

// storedShape is replayShape of a stored session.
func (e *agentEnv) storedShape(t *testing.T, session string) []string {
	t.Helper()
	r := e.agenthost(t, "sessions", "show", session, "--json")
	if r.code != 0 {
		t.Fatalf("sessions show %s: exit %d %s", session, r.code, r.stderr)
	}
	return replayShape(events(t, r.stdout))
}

// evalReport is what these tests read of eval --json.
type evalReport struct {
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	Cases  []struct {
		ID       string   `json:"id"`
		Pass     bool     `json:"pass"`
		Failures []string `json:"failures"`
		Outcome  struct {
			Session string `json:"session"`
		} `json:"outcome"`
	} `json:"cases"`
}

func (e *agentEnv) replay(t *testing.T, wantCode int, args ...string) evalReport {
	t.Helper()
	r := e.agenthost(t, append([]string{"eval", "--json"}, args...)...)
	var rep evalReport
	if r.code != wantCode || json.Unmarshal([]byte(r.stdout), &rep) != nil {
		t.Fatalf("eval %v: exit %d, want %d\n%s\n%s", args, r.code, wantCode, r.stdout, r.stderr)
	}
	return rep
}

// A run recorded against a loopback OpenAI-compatible server, calling the calc Wasm
// tool, is exported as a fixture; eval --replay reruns it with no server (the scripted
// adapter answers as the recorded model did, calc runs live) with the same events and a
// passing case, twice alike. A changed system prompt fails the replay at the model's
// first turn, naming both prompts; a changed tool (calc gone) fails the case's tool
// expectation, naming the recorded result and the one it got.
func TestE2E_RecordedRunReplaysOfflineAndFailsWhereItDiffers(t *testing.T) {
	e, srv := replayEnv(t)
	r := e.agenthost(t, "run", "--json", "--provider", "openai", "What is 17*23?")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	session := sessionOf(t, events(t, r.stdout))
	recorded := e.storedShape(t, session)
	if n := srv.requests.Load(); n != 2 {
		t.Fatalf("the recording made %d model requests, want 2", n)
	}

	fx := filepath.Join(e.dir, "fixtures", "mult")
	if r := e.agenthost(t, "sessions", "export", session, "--fixture", fx, "--id", "mult"); r.code != 0 ||
		r.stdout != "case mult: 2 model answers, 1 tool calls → "+fx+"\n" {
		t.Fatalf("export: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	cases := string(must(os.ReadFile(filepath.Join(fx, "cases.jsonl"))))
	wantCase := `{"id":"mult","input":{"prompt":"What is 17*23?"},"expect":{"equals":"17*23 = 391.",` +
		`"tools":[{"name":"calc","args":{"expression":"17*23"},"result":"391"}],"status":"completed"}}` + "\n"
	if cases != wantCase {
		t.Fatalf("cases.jsonl:\n%s\nwant\n%s", cases, wantCase)
	}
	var model struct {
		Stories []struct {
			When  string
			Turns []json.RawMessage
		}
	}
	if err := json.Unmarshal(must(os.ReadFile(filepath.Join(fx, "model.json"))), &model); err != nil ||
		len(model.Stories) != 1 || model.Stories[0].When != "What is 17*23?" || len(model.Stories[0].Turns) != 2 {
		t.Fatalf("model.json: %v %+v", err, model)
	}
	if tools := string(must(os.ReadFile(filepath.Join(fx, "tools.json")))); !strings.Contains(tools, `"id": "call_abc123"`) ||
		!strings.Contains(tools, `"content": "391"`) {
		t.Fatalf("tools.json:\n%s", tools)
	}

	// Offline: every replay leaves the server alone and stores what the recording did.
	for range 2 {
		rep := e.replay(t, 0, "--replay", fx)
		if rep.Passed != 1 || rep.Cases[0].ID != "mult" {
			t.Fatalf("replay: %+v", rep)
		}
		equalStrings(t, "replayed events", e.storedShape(t, rep.Cases[0].Outcome.Session), recorded)
	}
	if n := srv.requests.Load(); n != 2 {
		t.Fatalf("the replays made %d more model requests", n-2)
	}

	// The tools replayed too: same events; and the answer is tools.json's, not calc's
	// (an edited result fails the case, naming it).
	rep := e.replay(t, 0, "--replay", fx, "--tools", "replay")
	equalStrings(t, "events with replayed tools", e.storedShape(t, rep.Cases[0].Outcome.Session), recorded)
	toolsFile := filepath.Join(fx, "tools.json")
	tools := must(os.ReadFile(toolsFile))
	os.WriteFile(toolsFile, []byte(strings.Replace(string(tools), `"content": "391"`, `"content": "392"`, 1)), 0o644)
	rep = e.replay(t, 1, "--replay", fx, "--tools", "replay")
	if len(rep.Cases[0].Failures) != 1 || rep.Cases[0].Failures[0] !=
		`no call of calc with arguments {"expression":"17*23"} and result "391" (calls: calc); its results: "392"` {
		t.Fatalf("replay of an edited result: %+v", rep)
	}
	os.WriteFile(toolsFile, tools, 0o644)

	// Another system prompt: the replayed model's first turn expected the recorded one.
	manifest := string(must(os.ReadFile(e.manifest)))
	os.WriteFile(e.manifest, []byte(strings.Replace(manifest, `system_prompt = "You compute."`, `system_prompt = "You guess."`, 1)), 0o644)
	rep = e.replay(t, 1, "--replay", fx)
	want := `status failed/error, want completed: model call failed: provider: scripted: turn 1: expect.system_contains "You compute.", but the system message is "You guess."`
	if rep.Failed != 1 || len(rep.Cases[0].Failures) == 0 || rep.Cases[0].Failures[0] != want {
		t.Fatalf("replay with another prompt: %+v\nwant failure %s", rep, want)
	}

	// The prompt back, the calculator gone: the model's call is answered by the loop's
	// unknown-tool error, not the recorded 391.
	noCalc := manifest[:strings.Index(manifest, "[[plugins]]")] + manifest[strings.Index(manifest, "[providers.openai]"):]
	os.WriteFile(e.manifest, []byte(noCalc), 0o644)
	rep = e.replay(t, 1, "--replay", fx)
	if rep.Failed != 1 || len(rep.Cases[0].Failures) != 1 ||
		!strings.HasPrefix(rep.Cases[0].Failures[0], `no call of calc with arguments {"expression":"17*23"} and result "391" (calls: calc); its results: "`) {
		t.Fatalf("replay without calc: %+v", rep)
	}
}

// eval record runs a dataset against the loopback server once and writes the passing
// cases as one fixture (a failing case is named and left out, exit 1); eval --replay
// then passes both offline, each case played its own story although one prompt is part
// of the other. A fixture is refused, naming why, when it is half there, when a case
// id or a first message is already in it, and --tools without --replay is a usage
// error.
func TestE2E_EvalRecordWritesAFixtureThatReplaysOffline(t *testing.T) {
	e, srv := replayEnv(t)
	dataset := filepath.Join(e.dir, "smoke.jsonl")
	os.WriteFile(dataset, []byte(strings.Join([]string{
		`{"id": "mult", "input": {"prompt": "What is 17*23?"}, "expect": {"contains": ["391"]}}`,
		`{"id": "again", "input": {"prompt": "Again: What is 17*23?", "user": "ana"}}`,
		`{"id": "wrong", "input": {"prompt": "And 17*23?"}, "expect": {"contains": ["999"]}}`,
	}, "\n")), 0o644)
	fx := filepath.Join(e.dir, "smoke.replay")
	r := e.agenthost(t, "eval", "record", dataset, "--provider", "openai", "--fixture", fx)
	if r.code != 1 || !strings.Contains(r.stderr, `not recorded: case wrong failed: the final text does not contain "999"`) ||
		!strings.Contains(r.stdout, "recorded 2 of 3 cases in "+fx) {
		t.Fatalf("record: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	cases := string(must(os.ReadFile(filepath.Join(fx, "cases.jsonl"))))
	if !strings.Contains(cases, `{"id":"again","input":{"prompt":"Again: What is 17*23?","user":"ana"},"expect":{"equals":"17*23 = 391. Again."`) {
		t.Fatalf("cases.jsonl:\n%s", cases)
	}
	requests := srv.requests.Load()
	rep := e.replay(t, 0, "--replay", fx, "--parallel", "2")
	if rep.Passed != 2 || srv.requests.Load() != requests {
		t.Fatalf("replay: %+v, %d requests after %d", rep, srv.requests.Load(), requests)
	}

	// A session whose first message another story answers, or under a taken id.
	run := e.agenthost(t, "run", "--json", "--provider", "openai", "What is 17*23?")
	session := sessionOf(t, events(t, run.stdout))
	for _, c := range []struct{ id, want string }{
		{"mult", `already has a case "mult" (choose another with --id)`},
		{"other", `already replays a run whose first user message is "What is 17*23?"`},
	} {
		if r := e.agenthost(t, "sessions", "export", session, "--fixture", fx, "--id", c.id); r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Fatalf("export as %s: exit %d %s", c.id, r.code, r.stderr)
		}
	}
	if r := e.agenthost(t, "sessions", "export", "ses_nope", "--fixture", fx); r.code != 2 || !strings.Contains(r.stderr, `no session "ses_nope"`) {
		t.Fatalf("export of no session: exit %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "eval", dataset, "--tools", "replay"); r.code != 2 || !strings.Contains(r.stderr, "--tools replay: only with --replay") {
		t.Fatalf("--tools without --replay: exit %d %s", r.code, r.stderr)
	}
	os.Remove(filepath.Join(fx, "tools.json"))
	if r := e.agenthost(t, "eval", "--replay", fx); r.code != 2 || !strings.Contains(r.stderr, "but not all: not a replay fixture") {
		t.Fatalf("half a fixture: exit %d %s", r.code, r.stderr)
	}
}
