package loop

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestBadInputNeverPanics(t *testing.T) {
	if _, err := New(Config{}); err == nil || err.Error() != "loop: config has no model" {
		t.Fatalf("nil model: %v", err)
	}
	if _, err := New(Config{Model: script(), Hooks: []TerminationHook{nil}}); err == nil || err.Error() != "loop: termination hook 0 is nil" {
		t.Fatalf("nil hook: %v", err)
	}
	a := newAgent(t, Config{Model: script(turn{text: "x"})})
	for _, tc := range []struct {
		name string
		in   RunInput
		want string
	}{
		{"no messages", RunInput{SessionID: "s"}, "loop: no input messages and nothing pending in the session"},
		{"no role", RunInput{Messages: []Message{{Content: []Part{TextPart("hi")}}}}, "loop: message 0: message has no role"},
		{"empty", RunInput{Messages: []Message{{Role: RoleUser}}}, "loop: message 0: user message has no content"},
		{"bad role", RunInput{Messages: []Message{{Role: "robot", Content: []Part{TextPart("x")}}}}, `loop: message 0: unknown role "robot"`},
		{"orphan tool", RunInput{Messages: []Message{{Role: RoleTool, Content: []Part{TextPart("x")}}}}, "loop: message 0: tool message without tool_call_id"},
		{"bad schema", RunInput{Messages: []Message{UserMessage("x")}, OutputSchema: json.RawMessage(`{"type":`)}, "output schema: input schema is not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := a.Run(context.Background(), tc.in)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || res.Status != StatusFailed {
				t.Fatalf("got %v (%s), want %q", err, res.Status, tc.want)
			}
		})
	}
	//lint:ignore SA1012 the nil context is the case under test
	if _, err := a.Run(nil, userIn("s", "q")); err == nil || err.Error() != "loop: nil context" {
		t.Fatalf("nil ctx: %v", err)
	}
}

func TestModelFailuresEndInClearErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Model
		want string
	}{
		{"empty response", script(turn{deltas: []Delta{}}, turn{deltas: []Delta{}}),
			"model call failed after 2 attempts: provider: model returned an empty response (no text and no tool calls)"},
		{"panic", script(turn{panics: true}, turn{panics: true}),
			"model call failed: provider: model panicked: model exploded"},
		{"nil stream", modelFunc(func(context.Context, Request) (Stream, error) { return nil, nil }),
			"model call failed: provider: model returned no stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(t, Config{Model: tc.m, Retry: RetryPolicy{MaxAttempts: 2}})
			res, err := a.Run(context.Background(), userIn("s", "q"))
			if err == nil || err.Error() != tc.want || res.Status != StatusFailed {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestNewToolSetRejectsBadTools(t *testing.T) {
	bad := FuncTool{ToolSpec: ToolSpec{Name: "x", InputSchema: json.RawMessage(`{"type": 5}`)}}
	for _, tc := range []struct {
		tools []Tool
		want  string
	}{
		{[]Tool{calcTool(), calcTool()}, `duplicate tool name "calc"`},
		{[]Tool{nil}, "tool 0 is nil"},
		{[]Tool{FuncTool{}}, "tool 0 has no name"},
		{[]Tool{bad}, `tool "x": input schema: `},
	} {
		if _, err := NewToolSet(tc.tools...); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Fatalf("got %v, want %q", err, tc.want)
		}
	}
	ts := tools(t, calcTool(), wordsTool(), echoTool())
	if tl, ok := ts.Lookup("words"); !ok || tl.Spec().Name != "words" || ts.Len() != 3 {
		t.Fatal("lookup failed")
	}
	var names []string
	for _, s := range ts.offered([]string{"echo", "calc"}, []string{"echo"}) {
		names = append(names, s.Name)
	}
	equal(t, "offered", names, []string{"echo", "calc"})
}

// redactor replaces "secret" at every stage, and blocks content containing "forbidden".
type redactor struct{ stages []Stage }

func (*redactor) Name() string { return "redact" }
func (g *redactor) Check(_ context.Context, in GuardInput) (GuardResult, error) {
	g.stages = append(g.stages, in.Stage)
	if strings.Contains(in.Content, "forbidden") {
		return GuardResult{Action: GuardBlock, Reason: "forbidden word"}, nil
	}
	if strings.Contains(in.Content, "secret") {
		return GuardResult{Action: GuardRedact, Reason: "secret", Content: strings.ReplaceAll(in.Content, "secret", "[REDACTED]")}, nil
	}
	return GuardResult{Action: GuardAllow}, nil
}

func TestGuardrailsRedactAndBlockAtEachStage(t *testing.T) {
	m := script(
		turn{calls: []ToolCall{call("c1", "echo", `{"q":"secret"}`), call("c2", "echo", `{"q":"forbidden"}`)}},
		turn{text: "the secret is out"},
	)
	g := &redactor{}
	a := newAgent(t, Config{Model: m, Tools: tools(t, echoTool()), Guardrails: []Guardrail{g}})
	res, evs := runCollect(t, a, userIn("s", "tell me the secret"))
	if res.Final.Text() != "the [REDACTED] is out" {
		t.Fatalf("final %q", res.Final.Text())
	}
	equal(t, "history", history(t, a, "s"), []string{
		"user:tell me the [REDACTED]",
		`assistant: echo({"q":"secret"}) echo({"q":"forbidden"})`,
		`tool[c1]:got: {"q":"[REDACTED]"}`,
		`tool[c2]:Error: blocked by guardrail "redact" at tool_args: forbidden word`,
		"assistant:the secret is out", // history keeps what the model said; the final is redacted
	})
	equal(t, "stages", g.stages, []Stage{StageInput, StageToolArgs, StageToolResult, StageToolArgs, StageOutput})
	// c1's result no longer holds the secret (its arguments were redacted): no event.
	var acts []string
	for _, g := range eventsOf[GuardrailData](evs) {
		acts = append(acts, string(g.Stage)+":"+string(g.Action))
	}
	equal(t, "guardrail events", acts, []string{"input:redact", "tool_args:redact", "tool_args:block", "output:redact"})
}

func TestGuardrailBlockingInputFailsTheRun(t *testing.T) {
	m := script(turn{text: "never"})
	a := newAgent(t, Config{Model: m, Guardrails: []Guardrail{&redactor{}}})
	res, err := a.Run(context.Background(), userIn("s", "something forbidden"))
	if res.Status != StatusFailed || err.Error() != `blocked by guardrail "redact" at input: forbidden word` || len(m.requests()) != 0 {
		t.Fatalf("result %+v err %v", res, err)
	}
}

func TestRunStreamDeliversEveryEventAndCloses(t *testing.T) {
	a := newAgent(t, Config{Model: script(turn{text: "streamed"})})
	var got []Event
	for e := range a.RunStream(context.Background(), userIn("s", "q")) {
		got = append(got, e)
	}
	k := kinds(got)
	equal(t, "events", k, []string{"run_started", "status:preparing", "status:model_running", "assistant_message", "usage",
		"final", "status:completed", "run_finished:completed/end_turn"})
	var bad []Event
	for e := range a.RunStream(context.Background(), RunInput{Messages: []Message{{Role: RoleUser}}}) {
		bad = append(bad, e)
	}
	equal(t, "not started", kinds(bad), []string{"error:invalid_input", "run_finished:failed/error"})
	bad = nil
	for e := range a.RunStream(context.Background(), RunInput{SessionID: "x"}) {
		bad = append(bad, e)
	}
	equal(t, "started, then nothing to do", kinds(bad), []string{"run_started", "status:preparing", "error:invalid_input",
		"status:failed", "run_finished:failed/error"})
}

func TestEventsRoundTripThroughJSONAndTheStore(t *testing.T) {
	m := script(turn{reasoning: "r", text: "t", calls: []ToolCall{call("c1", "echo", `oops`)}}, turn{text: "fin"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, echoTool())})
	_, live := runCollect(t, a, userIn("s", "q"))
	entries, _ := a.Store().Load(context.Background(), "s")
	var stored []Event
	for _, e := range entries {
		if e.Kind == EntryEvent {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			var back Entry
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			stored = append(stored, *back.Event)
		}
	}
	var liveNoDeltas []Event
	for _, e := range live {
		if e.Type != EventModelDelta {
			liveNoDeltas = append(liveNoDeltas, e)
		}
	}
	if len(stored) != len(liveNoDeltas) {
		t.Fatalf("stored %d events, live %d", len(stored), len(liveNoDeltas))
	}
	for i := range stored {
		a, _ := json.Marshal(stored[i])
		b, _ := json.Marshal(liveNoDeltas[i])
		if string(a) != string(b) {
			t.Fatalf("event %d differs:\n stored %s\n live   %s", i, a, b)
		}
	}
	b, _ := json.Marshal(eventsOf[ToolCallData](live)[0])
	if string(b) != `{"id":"c1","name":"echo","arguments":{"_raw":"oops"}}` {
		t.Fatalf("tool_call data %s", b)
	}
	var e Event
	if err := json.Unmarshal([]byte(`{"type":"nope","data":{}}`), &e); err == nil || err.Error() != `unknown event type "nope"` {
		t.Fatalf("unknown type: %v", err)
	}
}

func TestMemoryStoreRefusesASeqItHolds(t *testing.T) {
	s := NewMemoryStore()
	ctx := context.Background()
	m := UserMessage("x")
	if err := s.Append(ctx, "a", Entry{Seq: 1, Kind: EntryMessage, Message: &m}); err != nil {
		t.Fatal(err)
	}
	err := s.Append(ctx, "a", Entry{Seq: 1, Kind: EntryMessage, Message: &m})
	if err == nil || err.Error() != `session "a": append seq 1, want 2 (another run writing?)` {
		t.Fatalf("err = %v", err)
	}
	if err := s.KVSet(ctx, "p", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := s.KVGet(ctx, "p", "k"); !ok || string(v) != "v" {
		t.Fatalf("kv = %q %v", v, ok)
	}
	if _, ok, _ := s.KVGet(ctx, "other", "k"); ok {
		t.Fatal("kv leaked across plugins")
	}
	if ss, _ := s.Sessions(ctx); len(ss) != 1 || ss[0].ID != "a" {
		t.Fatalf("sessions %v", ss)
	}
}

// failingStore fails every append after the first n.
type failingStore struct {
	*MemoryStore
	left int
}

func (s *failingStore) Append(ctx context.Context, id string, es ...Entry) error {
	if s.left == 0 {
		return errors.New("disk full")
	}
	s.left--
	return s.MemoryStore.Append(ctx, id, es...)
}

func TestStoreWriteFailureFailsTheRun(t *testing.T) {
	// One append succeeds: the step before the model call (system prompt, user message,
	// their events, L21). The next, the answer with the run's end, fails.
	store := &failingStore{MemoryStore: NewMemoryStore(), left: 1}
	m := script(turn{text: "lost"})
	a := newAgent(t, Config{SystemPrompt: "sys", Model: m, Store: store})
	res, err := a.Run(context.Background(), userIn("s", "q"))
	if res.Status != StatusFailed || err == nil || err.Error() != `store session "s": disk full` {
		t.Fatalf("result %+v err %v", res, err)
	}
	// What is stored is a prefix of what happened: the two messages, nothing after.
	equal(t, "history", history(t, a, "s"), []string{"system:sys", "user:q"})
}

// runlessStore fails every SaveRun.
type runlessStore struct{ *MemoryStore }

func (runlessStore) SaveRun(context.Context, RunRecord) error { return errors.New("runs table locked") }

func TestRunRecordWriteFailureFailsTheRun(t *testing.T) {
	m := script(turn{text: "never"})
	a := newAgent(t, Config{Model: m, Store: runlessStore{NewMemoryStore()}})
	in := userIn("s", "q")
	in.RunID = "r1"
	res, err := a.Run(context.Background(), in)
	if res.Status != StatusFailed || err == nil || err.Error() != `store run "r1": runs table locked` || len(m.requests()) != 0 {
		t.Fatalf("result %+v err %v", res, err)
	}
}

// endlessStore fails SaveRun once the run has started: the end record cannot be written.
type endlessStore struct {
	*MemoryStore
	saves int
}

func (s *endlessStore) SaveRun(ctx context.Context, r RunRecord) error {
	if s.saves++; s.saves > 1 {
		return errors.New("disk full")
	}
	return s.MemoryStore.SaveRun(ctx, r)
}

func TestEndRecordWriteFailureIsWhatRunFinishedSays(t *testing.T) {
	a := newAgent(t, Config{Model: script(turn{text: "done"}), Store: &endlessStore{MemoryStore: NewMemoryStore()}})
	in := userIn("s", "q")
	in.RunID = "r1"
	res, evs := runCollect(t, a, in)
	if res.Status != StatusFailed || res.Err == nil || res.Err.Error() != `store run "r1": disk full` {
		t.Fatalf("result %+v", res)
	}
	k := kinds(evs)
	equal(t, "tail", k[len(k)-4:], []string{"final", "error:error", "status:failed", "run_finished:failed/error"})
	entries, _ := a.Store().Load(context.Background(), "s")
	last := entries[len(entries)-1].Event.Data.(*RunFinishedData)
	if last.Status != StatusFailed {
		t.Fatalf("stored run_finished says %s", last.Status)
	}
}
