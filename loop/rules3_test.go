package loop

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func loopForever(n int) []turn {
	var ts []turn
	for i := 0; i < n; i++ {
		ts = append(ts, turn{calls: []ToolCall{call("c"+string(rune('a'+i)), "calc", `{"expression":"`+strings.Repeat("1+", i)+`1"}`)}})
	}
	return ts
}

func TestL9_MaxIterationsEndsWithAToolsOffSummary(t *testing.T) {
	var summaryReq Request
	turns := append(loopForever(3), turn{text: "I added ones three times.", check: func(r Request) { summaryReq = r }})
	m := script(turns...)
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Limits: Limits{MaxIterations: 3}})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusIncomplete || res.Reason != ReasonMaxIterations || res.Final.Text() != "I added ones three times." {
		t.Fatalf("result = %+v", res)
	}
	if len(summaryReq.Tools) != 0 {
		t.Fatalf("summary call offered %d tools", len(summaryReq.Tools))
	}
	last := summaryReq.Messages[len(summaryReq.Messages)-1]
	if last.Role != RoleUser || last.Text() != summaryPrompt {
		t.Fatalf("summary request ends with %+v", last)
	}
	h := history(t, a, "s")
	if len(h) != 8 || h[7] != "assistant:I added ones three times." {
		t.Fatalf("history %q: the summary prompt must not be stored, the summary must", h)
	}
	k := kinds(evs)
	equal(t, "tail", k[len(k)-5:], []string{"status:model_running", "usage", "final", "status:completed", "run_finished:incomplete/max_iterations"})
}

func TestL9_SummaryFailureFallsBackToFixedText(t *testing.T) {
	for name, last := range map[string]turn{
		"error":      {err: &ModelError{Kind: KindAuth, Message: "expired"}},
		"empty text": {calls: []ToolCall{call("x", "calc", `{}`)}},
	} {
		t.Run(name, func(t *testing.T) {
			turns := append(loopForever(1), last)
			a := newAgent(t, Config{Model: script(turns...), Tools: tools(t, calcTool()), Limits: Limits{MaxIterations: 1}})
			res, _ := runCollect(t, a, userIn("s", "go"))
			want := "The run stopped (max_iterations) before it finished, and no summary could be produced."
			if res.Status != StatusIncomplete || res.Final.Text() != want {
				t.Fatalf("result = %+v", res)
			}
		})
	}
}

func TestL9_ToolRoundsDurationTokenAndCostLimits(t *testing.T) {
	big := &Usage{PromptTokens: 600, CompletionTokens: 500}
	for _, tc := range []struct {
		name   string
		limits Limits
		want   Reason
	}{
		{"tool rounds", Limits{MaxToolRounds: 2}, ReasonMaxToolRounds},
		{"tokens", Limits{MaxTokens: 2000}, ReasonBudgetExceeded},
		{"cost", Limits{MaxCostUSD: 0.002}, ReasonBudgetExceeded},
		{"duration", Limits{MaxRunDuration: time.Minute}, ReasonMaxDuration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// tool rounds: 2 rounds; tokens: 2 calls of 1100 ≥ 2000; cost: 1100 tokens at $1/M
			// per call reaches $0.002 after 2; duration: 3 calls × 25 s ≥ 1 min.
			wantCalls := map[string]int{"tool rounds": 3, "tokens": 3, "cost": 3, "duration": 4}[tc.name]
			turns := loopForever(wantCalls - 1)
			for i := range turns {
				turns[i].usage = big
			}
			m := script(append(turns, turn{text: "summary"})...)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			// Each tool call takes 25 s of a fake clock.
			slowCalc := FuncTool{ToolSpec: calcTool().Spec(), Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
				now = now.Add(25 * time.Second)
				return calcTool().Call(ctx, c)
			}}
			a := newAgent(t, Config{Model: m, Tools: tools(t, slowCalc), Limits: tc.limits,
				Pricing: Pricing{PromptPerMTok: 1, CompletionPerMTok: 1}, Driver: testDriver{now: func() time.Time { return now }}})
			res, _ := runCollect(t, a, userIn("s", "go"))
			if res.Status != StatusIncomplete || res.Reason != tc.want || res.Final.Text() != "summary" {
				t.Fatalf("result = %+v", res)
			}
			if got := len(m.requests()); got != wantCalls {
				t.Fatalf("%d model calls, want %d", got, wantCalls)
			}
		})
	}
}

func TestL10_StructuredOutputWithToolsIsAskedForAtTheEnd(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"product":{"type":"integer"}},"required":["product"]}`)
	m := script(
		turn{calls: []ToolCall{call("c1", "calc", `{"expression":"17*23"}`)}},
		turn{text: "It is 391."},
		turn{text: `{"product": "391"}`},
		turn{text: `{"product": 391}`},
	)
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool())})
	in := userIn("s", "17*23 as JSON")
	in.OutputSchema = schema
	res, evs := runCollect(t, a, in)
	if res.Status != StatusCompleted || res.Reason != ReasonStructuredOutput || string(res.Output) != `{"product": 391}` {
		t.Fatalf("result = %+v", res)
	}
	reqs := m.requests()
	for i, r := range reqs {
		tools, format := len(r.Tools) > 0, len(r.ResponseFormat) > 0
		if want := i < 2; tools != want || format == want {
			t.Fatalf("call %d: tools=%v schema=%v", i, tools, format)
		}
	}
	h := history(t, a, "s")
	if h[5] != "user:Your answer is not valid output: /product: got string, want integer. Reply with only a JSON document that matches the schema." {
		t.Fatalf("decode error message = %q", h[5])
	}
	if f := eventsOf[FinalData](evs); string(f[0].Output) != `{"product": 391}` {
		t.Fatalf("final = %+v", f)
	}
}

func TestL10_DecodeRetriesExhausted(t *testing.T) {
	m := script(turn{text: "not json"}, turn{text: "{"}, turn{text: "[]"})
	a := newAgent(t, Config{Model: m})
	in := userIn("s", "json please")
	in.OutputSchema = json.RawMessage(`{"type":"object"}`)
	res, _ := runCollect(t, a, in)
	if res.Status != StatusFailed || res.Reason != ReasonDecodingFailed || res.Err == nil ||
		!strings.HasPrefix(res.Err.Error(), "structured output does not match the schema after 3 attempts: ") {
		t.Fatalf("result = %+v (%v)", res, res.Err)
	}
	for i, r := range m.requests() {
		if string(r.ResponseFormat) != `{"type":"object"}` {
			t.Fatalf("call %d without schema (no tools ⇒ schema on every call)", i)
		}
	}
}

func TestL11_DefaultStrategyTrimsOldToolOutputs(t *testing.T) {
	long := strings.Repeat("x", 50)
	big := FuncTool{ToolSpec: ToolSpec{Name: "big"}, Fn: func(context.Context, ToolCall) (ToolResult, error) {
		return TextResult(long), nil
	}}
	m := script(turn{calls: []ToolCall{call("c1", "big", `{}`)}}, turn{calls: []ToolCall{call("c2", "big", `{}`)}}, turn{text: "ok"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, big), Context: []ContextStrategy{DefaultContext{MaxToolChars: 10}}})
	runCollect(t, a, userIn("s", "go"))
	last := m.requests()[2].Messages
	if got := last[2].Text(); got != `xxxxxxxxxx`+"\n"+`[… 40 more bytes of this output not shown: read_tool_output {"id":"c1","offset":10}]` {
		t.Fatalf("old tool output = %q", got)
	}
	if got := last[4].Text(); got != long {
		t.Fatalf("latest tool output trimmed: %q", got)
	}
	if h := history(t, a, "s"); h[2] != "tool[c1]:"+long {
		t.Fatalf("the stored history must keep the full output, got %q", h[2])
	}
}

func TestL11_OverflowCompactsPersistsAndRetries(t *testing.T) {
	m := script(
		turn{text: "a1"}, turn{text: "a2"},
		turn{err: &ModelError{Kind: KindContextOverflow, Message: "too long"}},
		turn{text: "a3"},
		turn{text: "a4"},
	)
	a := newAgent(t, Config{SystemPrompt: "sys", Model: m})
	for _, q := range []string{"q1", "q2"} {
		a.Run(context.Background(), userIn("s", q))
	}
	res, evs := runCollect(t, a, userIn("s", "q3"))
	if res.Final.Text() != "a3" {
		t.Fatalf("result = %+v", res)
	}
	note := "[context compacted: 1 earlier messages were removed to fit the model's context window]"
	got := func(r Request) []string {
		var out []string
		for _, m := range r.Messages {
			out = append(out, string(m.Role)+":"+m.Text())
		}
		return out
	}
	reqs := m.requests()
	equal(t, "retried input", got(reqs[3]), []string{"system:sys", "user:q1", "user:" + note, "user:q2", "assistant:a2", "user:q3"})
	cu := eventsOf[ContextUpdateData](evs)
	if len(cu) != 1 || !cu[0].Overflow || cu[0].Compacted != 2 {
		t.Fatalf("context_update = %+v", cu)
	}
	// The compaction is stored: the next run starts from it without another overflow.
	a.Run(context.Background(), userIn("s", "q4"))
	equal(t, "next run input", got(m.requests()[4]), []string{"system:sys", "user:q1", "user:" + note, "user:q2", "assistant:a2", "user:q3", "assistant:a3", "user:q4"})
}

func TestL11_OverflowThatCannotBeCompactedFails(t *testing.T) {
	over := turn{err: &ModelError{Kind: KindContextOverflow, Message: "too long"}}
	m := script(over, over, over)
	a := newAgent(t, Config{Model: m})
	res, _ := runCollect(t, a, userIn("s", "q"))
	if res.Status != StatusFailed || res.Err.Error() != "model call failed: context_overflow: too long" || len(m.requests()) != 3 {
		t.Fatalf("result %+v after %d calls", res, len(m.requests()))
	}
}

// lastN keeps the system prompt and the last N history messages.
type lastN struct{ n int }

func (lastN) Name() string { return "last_n" }
func (s lastN) Build(_ context.Context, in ContextInput) (ContextOutput, error) {
	head := in.Messages[:len(in.Messages)-len(in.History)]
	h := in.History
	if len(h) > s.n {
		h = h[len(h)-s.n:]
	}
	return ContextOutput{Messages: append(append([]Message{}, head...), h...)}, nil
}

type brokenStrategy struct{}

func (brokenStrategy) Name() string { return "broken" }
func (brokenStrategy) Build(context.Context, ContextInput) (ContextOutput, error) {
	return ContextOutput{}, errors.New("plugin trapped")
}

func TestL11_StrategyChainRunsInOrderAndSkipsBrokenOnes(t *testing.T) {
	m := script(turn{text: "a1"}, turn{text: "a2"})
	a := newAgent(t, Config{SystemPrompt: "sys", Model: m, Context: []ContextStrategy{brokenStrategy{}, lastN{n: 1}, DefaultContext{}}})
	a.Run(context.Background(), userIn("s", "q1"))
	_, evs := runCollect(t, a, userIn("s", "q2"))
	msgs := m.requests()[1].Messages
	if len(msgs) != 2 || msgs[0].Text() != "sys" || msgs[1].Text() != "q2" {
		t.Fatalf("model input %+v", msgs)
	}
	if e := eventsOf[ErrorData](evs); len(e) != 1 || e[0].Message != `context strategy "broken": plugin trapped` {
		t.Fatalf("errors = %+v", e)
	}
}

func TestL12_BeforeFinalContinuesAtMostMaxContinuations(t *testing.T) {
	m := script(turn{text: "draft"}, turn{text: "better"}, turn{text: "best"}, turn{text: "final"})
	h := &stopHook{name: "todos", continues: 10}
	a := newAgent(t, Config{Model: m, Hooks: []TerminationHook{h}, MaxContinuations: 2})
	res, evs := runCollect(t, a, userIn("s", "write"))
	if res.Final.Text() != "best" || res.Reason != ReasonEndTurn {
		t.Fatalf("result = %+v", res)
	}
	equal(t, "history", history(t, a, "s"), []string{"user:write", "assistant:draft", "user:finish the todo list",
		"assistant:better", "user:finish the todo list", "assistant:best"})
	if hd := eventsOf[HookData](evs); len(hd) != 2 || hd[0].Point != "before_final" || hd[0].Verdict != VerdictContinue {
		t.Fatalf("hook events %+v", hd)
	}
}

func TestL9_MaxRunDurationStopsAHungToolAndTheCallsAfterIt(t *testing.T) {
	m := script(
		turn{calls: []ToolCall{call("c1", "wait", `{}`), call("c2", "calc", `{"expression":"1"}`)}},
		turn{text: "Out of time; nothing finished.", check: func(r Request) {}},
	)
	a := newAgent(t, Config{Model: m, Tools: tools(t, waitTool(nil), calcTool()), Limits: Limits{MaxRunDuration: 50 * time.Millisecond}})
	done := make(chan RunResult, 1)
	go func() { res, _ := a.Run(context.Background(), userIn("s", "go")); done <- res }()
	var res RunResult
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end at its deadline")
	}
	if res.Status != StatusIncomplete || res.Reason != ReasonMaxDuration || res.Final.Text() != "Out of time; nothing finished." {
		t.Fatalf("result %+v", res)
	}
	equal(t, "tool messages", history(t, a, "s")[2:4], []string{
		"tool[c1]:Error: tool 'wait' stopped: the run reached max_run_duration (50ms)",
		"tool[c2]:Error: tool call not executed: the run reached max_run_duration (50ms)"})
	if reqs := m.requests(); len(reqs) != 2 || len(reqs[1].Tools) != 0 {
		t.Fatalf("%d calls; the summary must offer no tools", len(reqs))
	}
}

func TestL9_MaxRunDurationStopsAHungModel(t *testing.T) {
	m := script(turn{hang: true}, turn{text: "summary after the deadline"})
	a := newAgent(t, Config{Model: m, Limits: Limits{MaxRunDuration: 50 * time.Millisecond}})
	done := make(chan RunResult, 1)
	go func() { res, _ := a.Run(context.Background(), userIn("s", "go")); done <- res }()
	select {
	case res := <-done:
		if res.Status != StatusIncomplete || res.Reason != ReasonMaxDuration || res.Final.Text() != "summary after the deadline" {
			t.Fatalf("result %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end at its deadline")
	}
}
