package insights

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

func ev[T any](seq int64, at time.Time, run, path string, data T, typ loop.EventType) loop.Entry {
	return loop.Entry{Seq: seq, RunID: run, Time: at, Kind: loop.EntryEvent,
		Event: &loop.Event{Seq: seq, Time: at, RunID: run, Agent: "a", Path: path, Type: typ, Data: &data}}
}

// A report counts the runs that started in the window only, and a nested run's tools
// count in its parent's, never as runs of their own; a failure keeps the last error
// message the run reported; a call a decision refused (denied, or rejected by a human)
// counts as refused, not as a call or an error of the tool.
func TestReportCountsTheWindowsRunsAndTheirToolsOnce(t *testing.T) {
	st := loop.NewMemoryStore()
	now := time.Now()
	old, recent := now.Add(-48*time.Hour), now.Add(-time.Hour)
	entries := []loop.Entry{
		ev(1, old, "r0", "", loop.RunStartedData{}, loop.EventRunStarted),
		ev(2, old, "r0", "", loop.ToolResultData{Name: "calc", DurationMS: 100}, loop.EventToolResult),
		ev(3, old, "r0", "", loop.RunFinishedData{Status: loop.StatusCompleted, Reason: loop.ReasonEndTurn}, loop.EventRunFinished),
		ev(4, recent, "r1", "", loop.RunStartedData{}, loop.EventRunStarted),
		ev(5, recent, "r1", "", loop.ToolResultData{Name: "calc", DurationMS: 10}, loop.EventToolResult),
		ev(6, recent, "r1", "", loop.ToolResultData{Name: "calc", IsError: true, DurationMS: 30}, loop.EventToolResult),
		ev(7, recent, "r1", "ask", loop.RunStartedData{}, loop.EventRunStarted),
		ev(8, recent, "r1", "ask", loop.RunFinishedData{Status: loop.StatusCompleted}, loop.EventRunFinished),
		ev(9, recent, "r1", "", loop.ErrorData{Kind: "provider", Message: "first"}, loop.EventError),
		ev(10, recent, "r1", "", loop.ErrorData{Kind: "provider", Message: "rate limited"}, loop.EventError),
		ev(11, recent, "r1", "", loop.ToolResultData{Name: "calc", IsError: true, Refused: loop.RefusedRejected}, loop.EventToolResult),
		ev(12, recent, "r1", "", loop.ToolResultData{Name: "rm", IsError: true, Refused: loop.RefusedDenied}, loop.EventToolResult),
		ev(13, recent, "r1", "", loop.RunFinishedData{Status: loop.StatusFailed, Reason: loop.ReasonError, Usage: loop.Usage{CostUSD: 0.5}}, loop.EventRunFinished),
	}
	if err := st.Append(context.Background(), "s", entries...); err != nil {
		t.Fatal(err)
	}
	r, err := Compute(context.Background(), st, now.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r.Runs != 1 || len(r.Outcomes) != 1 || r.Outcomes[0].Status != loop.StatusFailed || r.Outcomes[0].CostUSD != 0.5 {
		t.Fatalf("runs %d outcomes %+v", r.Runs, r.Outcomes)
	}
	if len(r.Tools) != 2 || r.Tools[0] != (Tool{Name: "calc", Calls: 2, Errors: 1, ErrorRate: 0.5, Refused: 1, MeanMS: 20, MaxMS: 30}) ||
		r.Tools[1] != (Tool{Name: "rm", Refused: 1}) {
		t.Fatalf("tools %+v", r.Tools)
	}
	if len(r.Failures) != 1 || r.Failures[0].Message != "rate limited" || r.Failures[0].Examples[0] != (RunRef{"s", "r1"}) {
		t.Fatalf("failures %+v", r.Failures)
	}
	if r.Cost["failed"] != 0.5 {
		t.Fatalf("cost %+v", r.Cost)
	}
}

// A call answered from the tool-result cache counts as cached, not as a call the tool
// ran; the runs' cached prompt tokens are summed beside their prompt tokens.
func TestReportCountsCachedCallsAndCachedPromptTokens(t *testing.T) {
	st := loop.NewMemoryStore()
	at := time.Now().Add(-time.Minute)
	entries := []loop.Entry{
		ev(1, at, "r1", "", loop.RunStartedData{}, loop.EventRunStarted),
		ev(2, at, "r1", "", loop.ToolResultData{Name: "lookup", DurationMS: 40}, loop.EventToolResult),
		ev(3, at, "r1", "", loop.ToolResultData{Name: "lookup", Cached: true, CacheAgeMS: 5000}, loop.EventToolResult),
		ev(4, at, "r1", "", loop.RunFinishedData{Status: loop.StatusCompleted, Usage: loop.Usage{PromptTokens: 1200, CompletionTokens: 30,
			CacheReadTokens: 1000, CacheWriteTokens: 100}}, loop.EventRunFinished),
	}
	if err := st.Append(context.Background(), "s", entries...); err != nil {
		t.Fatal(err)
	}
	r, err := Compute(context.Background(), st, at.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tools) != 1 || r.Tools[0] != (Tool{Name: "lookup", Calls: 1, Cached: 1, MeanMS: 40, MaxMS: 40}) {
		t.Fatalf("tools %+v", r.Tools)
	}
	if r.Tokens != (Tokens{Prompt: 1200, Completion: 30, CachedPrompt: 1000, CacheWrite: 100}) {
		t.Fatalf("tokens %+v", r.Tokens)
	}
}

// A call another tool stood in for (its tool_result names the fallback) failed: it is an
// error of the tool it named, and the fallback's own call counts for the fallback.
func TestReportCountsACallAFallbackStoodInForAsTheToolsError(t *testing.T) {
	st := loop.NewMemoryStore()
	at := time.Now().Add(-time.Minute)
	if err := st.Append(context.Background(), "s",
		ev(1, at, "r1", "", loop.RunStartedData{}, loop.EventRunStarted),
		ev(2, at, "r1", "", loop.ToolResultData{ID: "c1~pricey", Name: "pricey", DurationMS: 4}, loop.EventToolResult),
		ev(3, at, "r1", "", loop.ToolResultData{ID: "c1", Name: "cheap", Fallback: "pricey", DurationMS: 2}, loop.EventToolResult),
		ev(4, at, "r1", "", loop.RunFinishedData{Status: loop.StatusCompleted}, loop.EventRunFinished)); err != nil {
		t.Fatal(err)
	}
	r, err := Compute(context.Background(), st, at.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tools) != 2 || r.Tools[0] != (Tool{Name: "cheap", Calls: 1, Errors: 1, ErrorRate: 1, MeanMS: 2, MaxMS: 2}) ||
		r.Tools[1] != (Tool{Name: "pricey", Calls: 1, MeanMS: 4, MaxMS: 4}) {
		t.Fatalf("tools %+v", r.Tools)
	}
}
