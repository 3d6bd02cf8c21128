package eval

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/loop/looptest"
)

// recordedSession runs two runs on one session through the real loop (a scripted
// model, a Go tool that doubles, the memory store) and returns its stored entries: the
// first run answers at once, the second calls the tool twice in one answer and answers.
func recordedSession(t *testing.T) []loop.Entry {
	t.Helper()
	double := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "double", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
			var a struct{ N int }
			json.Unmarshal([]byte(c.Arguments), &a)
			if a.N < 0 {
				return loop.ErrorResult("negative"), nil
			}
			b, _ := json.Marshal(a.N * 2)
			return loop.TextResult(string(b)), nil
		}}
	tools, err := loop.NewToolSet(double)
	if err != nil {
		t.Fatal(err)
	}
	model := looptest.NewModel(
		looptest.Turn{Text: "Hello."},
		looptest.Turn{Reasoning: "two calls", Calls: []loop.ToolCall{{ID: "c1", Name: "double", Arguments: `{"n": 21}`},
			{ID: "c2", Name: "double", Arguments: `{"n": -1}`}}, Usage: &loop.Usage{PromptTokens: 10, CompletionTokens: 4, TotalTokens: 14}},
		looptest.Turn{Text: "42, and an error.", Usage: &loop.Usage{PromptTokens: 30, CompletionTokens: 5, TotalTokens: 35}},
	)
	store := loop.NewMemoryStore()
	agent, err := loop.New(loop.Config{Name: "a", SystemPrompt: "You double.", Model: model, Tools: tools, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	for _, prompt := range []string{"Hi", "Double 21 and -1"} {
		if res, err := agent.Run(context.Background(), loop.RunInput{SessionID: "s1", User: "ana", Messages: []loop.Message{loop.UserMessage(prompt)}}); err != nil || res.Status != loop.StatusCompleted {
			t.Fatalf("run %q: %v %+v", prompt, err, res)
		}
	}
	entries, err := store.Load(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// A recording is the session's last run: its answers with their calls, reasoning and
// usage; its tools' results (an error one marked); its system message; earlier runs as
// the input's messages; and a case expecting the same end, calls in order with their
// arguments and results, and the same final text. The case passes on the recorded
// run's own outcome and fails, naming the difference, on another.
func TestRecordTakesTheLastRunAndExpectsWhatItDid(t *testing.T) {
	rec, err := Record("doubling", recordedSession(t))
	if err != nil {
		t.Fatal(err)
	}
	if rec.System != "You double." || rec.Case.Input.User != "ana" || len(rec.Turns) != 2 || len(rec.Tools) != 2 {
		t.Fatalf("recording: %+v", rec)
	}
	wantMsgs := []Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello."}, {Role: "user", Content: "Double 21 and -1"}}
	if got, _ := json.Marshal(rec.Case.Input.Messages); string(got) != string(must(json.Marshal(wantMsgs))) || rec.Case.Input.Prompt != "" {
		t.Fatalf("input messages %s", got)
	}
	t1, t2 := rec.Turns[0], rec.Turns[1]
	if t1.Reasoning != "two calls" || len(t1.Calls) != 2 || t1.Calls[1].Arguments != `{"n": -1}` || t1.Usage.TotalTokens != 14 ||
		t1.Stop != loop.StopToolUse || t2.Text != "42, and an error." || t2.Usage.PromptTokens != 30 || t2.Stop != loop.StopEndTurn {
		t.Fatalf("turns: %+v", rec.Turns)
	}
	if r := rec.Tools[1]; r.ID != "c2" || r.Content != "negative" || !r.IsError || rec.Tools[0].Content != "42" {
		t.Fatalf("tools: %+v", rec.Tools)
	}
	x, err := json.Marshal(rec.Case.Expect)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"equals":"42, and an error.","tools":[{"name":"double","args":{"n":21},"result":"42"},` +
		`{"name":"double","args":{"n":-1},"result":"negative"}],"tools_in_order":true,"status":"completed"}`
	if string(x) != want {
		t.Fatalf("expect:\n%s\nwant\n%s", x, want)
	}

	ptr := func(s string) *string { return &s }
	same := Outcome{Status: "completed", Final: "42, and an error.", Calls: []ToolCall{
		{Name: "double", Args: map[string]any{"n": 21.0}, Result: ptr("42")}, {Name: "double", Args: map[string]any{"n": -1.0}, Result: ptr("negative")}}}
	if f := rec.Case.Expect.failures(same); len(f) != 0 {
		t.Fatalf("the recorded outcome fails: %q", f)
	}
	other := same
	other.Final = "43."
	other.Calls = []ToolCall{same.Calls[0], {Name: "double", Args: map[string]any{"n": -1.0}, Result: ptr("-2")}}
	f := rec.Case.Expect.failures(other)
	if len(f) != 2 || f[0] != `the final text is "43.", want "42, and an error."` ||
		f[1] != `no call of double with arguments {"n":-1} and result "negative" after the previous expected call (calls: double, double); its results: "42", "-2"` {
		t.Fatalf("failures: %q", f)
	}
}

// A session with no finished run cannot be recorded; a run that failed is recorded
// with its status and reason, and a replay that completes instead says why it failed
// the case with the run's last error.
func TestRecordRefusesAnUnfinishedSessionAndKeepsAFailure(t *testing.T) {
	if _, err := Record("x", nil); err == nil || err.Error() != "the session has no finished run" {
		t.Fatalf("empty: %v", err)
	}
	x := expectOf(&loop.RunFinishedData{Status: loop.StatusFailed, Reason: "max_iterations"}, nil, nil)
	if x.Status != "failed" || x.Reason != "max_iterations" || !x.NoTools || x.Equals != nil {
		t.Fatalf("expect: %+v", x)
	}
	f := (Expect{}).failures(Outcome{Status: "failed", Reason: "error", lastError: "scripted: turn 1: expect.system_contains \"a\""})
	if len(f) != 1 || !strings.HasSuffix(f[0], `want completed: scripted: turn 1: expect.system_contains "a"`) {
		t.Fatalf("failures: %q", f)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
