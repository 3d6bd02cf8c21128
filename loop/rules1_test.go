package loop

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestL1_SystemPromptStoredOnceAsFirstEntry(t *testing.T) {
	m := script(turn{text: "hi"}, turn{text: "again"})
	a := newAgent(t, Config{SystemPrompt: "Be brief.", Model: m})
	for _, q := range []string{"one", "two"} {
		if res, err := a.Run(context.Background(), userIn("s1", q)); err != nil || res.Status != StatusCompleted {
			t.Fatalf("run %q: %v %v", q, res.Status, err)
		}
	}
	equal(t, "history", history(t, a, "s1"), []string{
		"system:Be brief.", "user:one", "assistant:hi", "user:two", "assistant:again"})
	entries, _ := a.Store().Load(context.Background(), "s1")
	if entries[0].Seq != 1 || entries[0].Kind != EntryMessage || entries[0].Message.Role != RoleSystem {
		t.Fatalf("first entry = %+v, want the system prompt at seq 1", entries[0])
	}
	reqs := m.requests()
	if got := reqs[1].Messages[0].Text(); got != "Be brief." || len(reqs[1].Messages) != 4 {
		t.Fatalf("second run's input = %d messages starting %q", len(reqs[1].Messages), got)
	}
}

func TestL1_SystemPromptOverrideIsNotStored(t *testing.T) {
	m := script(turn{text: "ok"})
	a := newAgent(t, Config{SystemPrompt: "Stored.", Model: m})
	in := userIn("s", "q")
	in.SystemPromptOverride = "Only for this run."
	if _, err := a.Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if got := m.requests()[0].Messages[0].Text(); got != "Only for this run." {
		t.Fatalf("model saw system %q", got)
	}
	equal(t, "history", history(t, a, "s"), []string{"system:Stored.", "user:q", "assistant:ok"})
}

func TestL2_IterationOrderOfEventsAndHistory(t *testing.T) {
	m := script(
		turn{reasoning: "need math", text: "Let me compute.", calls: []ToolCall{call("c1", "calc", `{"expression":"17*23"}`)}},
		turn{text: "17*23 = 391"},
	)
	a := newAgent(t, Config{SystemPrompt: "sys", Model: m, Tools: tools(t, calcTool())})
	res, evs := runCollect(t, a, userIn("s", "what is 17*23?"))
	if res.Status != StatusCompleted || res.Reason != ReasonEndTurn || res.Final.Text() != "17*23 = 391" {
		t.Fatalf("result = %+v", res)
	}
	equal(t, "events", kinds(evs), []string{
		"run_started", "status:preparing", "status:model_running",
		"reasoning", "text", "assistant_message", "usage",
		"status:tool_running", "step_start:calc", "tool_call:calc", "tool_result:calc", "step_complete:ok",
		"status:model_running", "assistant_message", "usage",
		"final", "status:completed", "run_finished:completed/end_turn",
	})
	equal(t, "history", history(t, a, "s"), []string{
		"system:sys", "user:what is 17*23?", `assistant:Let me compute. calc({"expression":"17*23"})`,
		"tool[c1]:391", "assistant:17*23 = 391"})
	// Deltas carry call index and per-call seq; the assembled message equals their sum.
	var text strings.Builder
	for _, d := range eventsOf[ModelDeltaData](evs) {
		if d.CallIndex == 2 && d.Kind == DeltaText {
			text.WriteString(d.Text)
		}
	}
	if text.String() != "17*23 = 391" {
		t.Fatalf("call 2 text deltas = %q", text.String())
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.SessionID != "s" || e.RunID != res.RunID || e.Agent != "test" {
			t.Fatalf("event %d header = %+v", i, e)
		}
	}
	if f := eventsOf[FinalData](evs); f[0].Text != "17*23 = 391" {
		t.Fatalf("final = %+v", f)
	}
}

func TestL3_RetriesHonourRetryAfterThenBackoff(t *testing.T) {
	m := script(
		turn{err: &ModelError{Kind: KindRateLimit, Message: "slow down", Retryable: true, RetryAfter: 20 * time.Millisecond}},
		turn{err: &ModelError{Kind: KindOverloaded, Message: "busy"}},
		turn{err: errors.New("connection reset")},
		turn{text: "fine"},
	)
	var slept []time.Duration
	a := newAgent(t, Config{Model: m,
		Retry:  RetryPolicy{BaseDelay: 10 * time.Millisecond, MaxAttempts: 4},
		Driver: testDriver{sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}})
	res, evs := runCollect(t, a, userIn("s", "q"))
	if res.Status != StatusCompleted || res.Final.Text() != "fine" {
		t.Fatalf("result = %+v", res)
	}
	equal(t, "delays", slept, []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond})
	errs := eventsOf[ErrorData](evs)
	equal(t, "error kinds", []string{errs[0].Kind, errs[1].Kind, errs[2].Kind}, []string{"rate_limit", "overloaded", "transport"})
	for _, e := range errs {
		if !e.Retryable {
			t.Fatalf("error %+v should say retryable", e)
		}
	}
	// One logical call: every attempt carries the same call index.
	for _, r := range m.requests() {
		if r.Metadata.CallIndex != 1 {
			t.Fatalf("call index %d, want 1 for every attempt", r.Metadata.CallIndex)
		}
	}
}

func TestL3_NonRetryableErrorFailsTheRun(t *testing.T) {
	m := script(turn{err: &ModelError{Kind: KindAuth, Message: "bad key"}}, turn{text: "never"})
	a := newAgent(t, Config{Model: m})
	res, evs := runCollect(t, a, userIn("s", "q"))
	if res.Status != StatusFailed || res.Reason != ReasonError || res.Err == nil ||
		res.Err.Error() != "model call failed: auth: bad key" {
		t.Fatalf("result = %+v", res)
	}
	if len(m.requests()) != 1 {
		t.Fatalf("made %d calls, want 1", len(m.requests()))
	}
	equal(t, "tail", kinds(evs)[len(kinds(evs))-4:], []string{"error:auth", "error:auth", "status:failed", "run_finished:failed/error"})
	if f := eventsOf[FinalData](evs); len(f) != 0 {
		t.Fatalf("failed run emitted final %+v", f)
	}
}

func TestL3_AttemptsExhausted(t *testing.T) {
	over := turn{err: &ModelError{Kind: KindOverloaded, Message: "busy"}}
	m := script(over, over, over)
	a := newAgent(t, Config{Model: m, Retry: RetryPolicy{MaxAttempts: 3, BaseDelay: time.Microsecond}})
	res, _ := runCollect(t, a, userIn("s", "q"))
	if res.Status != StatusFailed || res.Err.Error() != "model call failed after 3 attempts: overloaded: busy" {
		t.Fatalf("result = %+v, err %v", res, res.Err)
	}
}

func TestL3_RetryableSetIsConfigurable(t *testing.T) {
	m := script(turn{err: &ModelError{Kind: KindRateLimit, Message: "no"}}, turn{text: "x"})
	a := newAgent(t, Config{Model: m, Retry: RetryPolicy{Retryable: []ErrorKind{KindOverloaded}}})
	if res, _ := a.Run(context.Background(), userIn("s", "q")); res.Status != StatusFailed {
		t.Fatalf("rate_limit retried although not in the set: %+v", res)
	}
}

func TestL4_ToolCallsRunWhateverTheStopReason(t *testing.T) {
	m := script(
		turn{calls: []ToolCall{call("c1", "words", `{"text":"a b c"}`)}, stop: "stop"},
		turn{text: "three words"},
	)
	a := newAgent(t, Config{Model: m, Tools: tools(t, wordsTool())})
	res, _ := runCollect(t, a, userIn("s", "count"))
	if res.Final.Text() != "three words" {
		t.Fatalf("result = %+v", res)
	}
	equal(t, "history", history(t, a, "s"), []string{"user:count", `assistant: words({"text":"a b c"})`, "tool[c1]:3", "assistant:three words"})
}

// stopHook stops on the step whose iteration is at, and continues finals n times.
type stopHook struct {
	name      string
	at        int
	final     string
	continues int
	seen      []int
}

func (h *stopHook) Name() string { return h.name }
func (h *stopHook) OnStep(_ context.Context, s StepInfo) (Decision, error) {
	h.seen = append(h.seen, s.Iteration)
	if s.Iteration == h.at {
		return Decision{Verdict: VerdictStop, Reason: "enough", Message: h.final}, nil
	}
	return Decision{}, nil
}
func (h *stopHook) BeforeFinal(_ context.Context, f FinalInfo) (Decision, error) {
	if f.Continuations < h.continues {
		return Decision{Verdict: VerdictContinue, Reason: "todos left", Message: "finish the todo list"}, nil
	}
	return Decision{}, nil
}

func TestL4_HookStopsAfterCapsPassAndCallsAreNotRun(t *testing.T) {
	m := script(
		turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1+1"}`)}},
		turn{calls: []ToolCall{call("c2", "calc", `{"expression":"2+2"}`)}},
		turn{text: "summary: computed 1+1"},
	)
	h := &stopHook{name: "budget", at: 2}
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Hooks: []TerminationHook{h}})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusIncomplete || res.Reason != ReasonHookStop || res.Final.Text() != "summary: computed 1+1" {
		t.Fatalf("result = %+v", res)
	}
	equal(t, "hook saw", h.seen, []int{1, 2})
	hd := eventsOf[HookData](evs)
	if len(hd) != 1 || hd[0] != (HookData{Name: "budget", Point: "on_step", Verdict: VerdictStop, Reason: "enough"}) {
		t.Fatalf("hook events = %+v", hd)
	}
	equal(t, "history", history(t, a, "s"), []string{
		"user:go", `assistant: calc({"expression":"1+1"})`, "tool[c1]:2",
		`assistant: calc({"expression":"2+2"})`, "tool[c2]:Error: tool call not executed: the run stopped (hook_stop)",
		"assistant:summary: computed 1+1"})
}

func TestL4_HookStopWithItsOwnFinalSkipsTheSummaryCall(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1"}`)}})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Hooks: []TerminationHook{&stopHook{name: "h", at: 1, final: "stopped by policy"}}})
	res, _ := runCollect(t, a, userIn("s", "go"))
	if res.Final.Text() != "stopped by policy" || len(m.requests()) != 1 {
		t.Fatalf("result = %+v after %d calls", res, len(m.requests()))
	}
}
