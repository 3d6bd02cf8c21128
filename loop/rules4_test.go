package loop

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestL13_AbortDuringAToolKeepsTheSession(t *testing.T) {
	started := make(chan string, 1)
	m := script(turn{calls: []ToolCall{call("c1", "wait", `{}`), call("c2", "calc", `{"expression":"1"}`)}}, turn{text: "never"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, waitTool(started), calcTool())})
	in := userIn("s", "go")
	in.RunID = "r1"
	done := make(chan RunResult)
	var evs []Event
	go func() {
		res, _ := a.RunWith(context.Background(), in, func(e Event) { evs = append(evs, e) })
		done <- res
	}()
	<-started
	if !a.Abort(in.SessionID, "r1") {
		t.Fatal("Abort found no run")
	}
	res := <-done
	if res.Status != StatusAborted || res.Reason != ReasonCancelled || !errors.Is(res.Err, ErrAborted) || res.Final != nil {
		t.Fatalf("result = %+v", res)
	}
	k := kinds(evs)
	equal(t, "tail", k[len(k)-5:], []string{"tool_call:wait", "tool_result:wait!", "step_complete:error", "status:aborted", "run_finished:aborted/cancelled"})
	if f := eventsOf[FinalData](evs); len(f) != 0 {
		t.Fatal("aborted run emitted a final")
	}
	// The tool that was running is stored with its result; c2 was never started.
	equal(t, "history", history(t, a, "s"), []string{"user:go",
		`assistant: wait({}) calc({"expression":"1"})`, "tool[c1]:Error: context canceled"})
	if a.Abort(in.SessionID, "r1") {
		t.Fatal("Abort of a finished run reported true")
	}
	// The session is not locked by the aborted run, and a resume runs only c2 (L14).
	res2, _ := runCollect(t, a, RunInput{SessionID: "s"})
	if res2.Final.Text() != "never" {
		t.Fatalf("resume result %+v", res2)
	}
	equal(t, "resumed history", history(t, a, "s")[2:], []string{"tool[c1]:Error: context canceled", "tool[c2]:1", "assistant:never"})
}

func TestL13_CancelledContextBeforeStartAndDuringModel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := script(turn{text: "x"})
	a := newAgent(t, Config{Model: m})
	res, _ := a.Run(ctx, userIn("s", "q"))
	if res.Status != StatusAborted || len(m.requests()) != 0 {
		t.Fatalf("result %+v, %d model calls", res, len(m.requests()))
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	m2 := script(turn{check: func(Request) { cancel2() }, text: "late"})
	a2 := newAgent(t, Config{Model: m2})
	res2, _ := a2.Run(ctx2, userIn("s", "q"))
	if res2.Status != StatusAborted || !errors.Is(res2.Err, context.Canceled) {
		t.Fatalf("result %+v", res2)
	}
}

func TestL13_ContextReachesModelAndTools(t *testing.T) {
	type key struct{}
	var toolSaw, modelSaw any
	probe := FuncTool{ToolSpec: ToolSpec{Name: "probe"}, Fn: func(ctx context.Context, _ ToolCall) (ToolResult, error) {
		toolSaw = ctx.Value(key{})
		return TextResult("ok"), nil
	}}
	m := script(turn{calls: []ToolCall{call("c1", "probe", `{}`)}}, turn{text: "done"})
	wrapped := modelFunc(func(ctx context.Context, r Request) (Stream, error) {
		modelSaw = ctx.Value(key{})
		return m.Stream(ctx, r)
	})
	a := newAgent(t, Config{Model: wrapped, Tools: tools(t, probe)})
	a.Run(context.WithValue(context.Background(), key{}, "v"), userIn("s", "q"))
	if toolSaw != "v" || modelSaw != "v" {
		t.Fatalf("tool saw %v, model saw %v", toolSaw, modelSaw)
	}
}

type modelFunc func(ctx context.Context, r Request) (Stream, error)

func (f modelFunc) Stream(ctx context.Context, r Request) (Stream, error) { return f(ctx, r) }

func TestL14_ResumeDoesNotReexecuteStoredToolCalls(t *testing.T) {
	store := NewMemoryStore()
	ctx := context.Background()
	// A crashed run left two calls, one with a stored result.
	crashed := []Message{
		UserMessage("compute both"),
		{Role: RoleAssistant, ToolCalls: []ToolCall{call("c1", "count", `{}`), call("c2", "count", `{}`)}},
		{Role: RoleTool, ToolCallID: "c1", Name: "count", Content: []Part{TextPart("1")}},
	}
	for i, m := range crashed {
		m := m
		if err := store.Append(ctx, "s", Entry{Seq: int64(i + 1), Kind: EntryMessage, Message: &m}); err != nil {
			t.Fatal(err)
		}
	}
	var ran []string
	count := FuncTool{ToolSpec: ToolSpec{Name: "count"}, Fn: func(_ context.Context, c ToolCall) (ToolResult, error) {
		ran = append(ran, c.ID)
		return TextResult("2"), nil
	}}
	m := script(turn{text: "both done"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, count), Store: store})
	res, _ := runCollect(t, a, RunInput{SessionID: "s"})
	if res.Final.Text() != "both done" {
		t.Fatalf("result %+v", res)
	}
	equal(t, "executed", ran, []string{"c2"})
	equal(t, "history", history(t, a, "s"), []string{"user:compute both", "assistant: count({}) count({})", "tool[c1]:1", "tool[c2]:2", "assistant:both done"})
}

func TestL14_ReplayedDeltasAreDeduplicated(t *testing.T) {
	d := func(seq int, text string) Delta { return Delta{Seq: seq, Kind: DeltaText, Text: text} }
	m := script(
		turn{deltas: []Delta{d(1, "Hel"), d(2, "lo"), d(1, "Hel"), d(2, "lo"), d(3, " world"), {Seq: 4, Kind: DeltaFinish, StopReason: "end_turn"}}},
	)
	a := newAgent(t, Config{Model: m})
	res, evs := runCollect(t, a, userIn("s", "q"))
	if res.Final.Text() != "Hello world" {
		t.Fatalf("final %q", res.Final.Text())
	}
	var seqs []int
	var kinds []DeltaKind
	for _, e := range eventsOf[ModelDeltaData](evs) {
		seqs = append(seqs, e.Seq)
		kinds = append(kinds, e.Kind)
	}
	// The stream's end is one finish delta, after the last piece (seq 0: the loop's own).
	equal(t, "delta seqs", seqs, []int{1, 2, 3, 0})
	equal(t, "delta kinds", kinds, []DeltaKind{DeltaText, DeltaText, DeltaText, DeltaFinish})
}

func TestL14_RetryAfterMidStreamFailureDoesNotRepeatDeltas(t *testing.T) {
	m := script(
		turn{text: "Hello", midErr: &ModelError{Kind: KindOverloaded, Message: "dropped"}},
		turn{text: "Hello"},
	)
	a := newAgent(t, Config{Model: m})
	res, evs := runCollect(t, a, userIn("s", "q"))
	if res.Final.Text() != "Hello" {
		t.Fatalf("final %q", res.Final.Text())
	}
	var text string
	finishes := 0
	for _, e := range eventsOf[ModelDeltaData](evs) {
		if e.Kind == DeltaFinish {
			finishes++ // the failed stream never finished: one, for the retry's
			continue
		}
		text += e.Text
	}
	if finishes != 1 {
		t.Fatalf("%d finish deltas, want 1 (the failed attempt's stream did not finish)", finishes)
	}
	if text != "Hello" {
		t.Fatalf("clients saw %q, want each piece once", text)
	}
}

func TestUsageTotalsAndCostAcrossCalls(t *testing.T) {
	m := script(
		turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1"}`)}, usage: &Usage{PromptTokens: 100, CompletionTokens: 20}},
		turn{text: "1", usage: &Usage{PromptTokens: 130, CompletionTokens: 5, CostUSD: 0.5}},
	)
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Pricing: Pricing{PromptPerMTok: 2, CompletionPerMTok: 10}})
	res, evs := runCollect(t, a, userIn("s", "q"))
	want := Usage{PromptTokens: 230, CompletionTokens: 25, TotalTokens: 255, CostUSD: 0.0002 + 0.0002 + 0.5}
	if res.Usage.PromptTokens != want.PromptTokens || res.Usage.TotalTokens != want.TotalTokens ||
		res.Usage.CostUSD < want.CostUSD-1e-12 || res.Usage.CostUSD > want.CostUSD+1e-12 {
		t.Fatalf("usage %+v, want %+v", res.Usage, want)
	}
	rf := eventsOf[RunFinishedData](evs)
	if rf[0].Usage != res.Usage {
		t.Fatalf("run_finished usage %+v", rf[0].Usage)
	}
	runs, _ := a.Store().Runs(context.Background(), "s")
	if len(runs) != 1 || runs[0].Status != StatusCompleted || runs[0].Usage != res.Usage || runs[0].Ended.IsZero() {
		t.Fatalf("run record %+v", runs)
	}
}

func TestSessionBusyRejectsASecondConcurrentRun(t *testing.T) {
	started := make(chan string, 1)
	m := script(turn{calls: []ToolCall{call("c1", "wait", `{}`)}})
	a := newAgent(t, Config{Model: m, Tools: tools(t, waitTool(started))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx, userIn("s", "one")); close(done) }()
	<-started
	_, err := a.Run(context.Background(), userIn("s", "two"))
	if !errors.Is(err, ErrSessionBusy) || err.Error() != `loop: session "s": session already has a run in progress` {
		t.Fatalf("err = %v", err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled run did not end")
	}
}

// run_finished is delivered once the run has let go of its session: a caller that
// starts the session's next run the moment it sees run_finished (here, from inside the
// emit callback) is not refused as ErrSessionBusy.
func TestRunFinishedArrivesWhenTheSessionIsFree(t *testing.T) {
	m := script(turn{text: "first"}, turn{text: "second"})
	a := newAgent(t, Config{Model: m})
	var next RunResult
	var nextErr error
	_, err := a.RunWith(context.Background(), userIn("s", "one"), func(e Event) {
		if e.Type == EventRunFinished {
			next, nextErr = a.RunWith(context.Background(), userIn("s", "two"), nil)
		}
	})
	if err != nil || nextErr != nil || next.Status != StatusCompleted || next.Final.Text() != "second" {
		t.Fatalf("first %v; next %+v %v", err, next, nextErr)
	}
}
