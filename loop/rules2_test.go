package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestL5_UnknownToolIsAnErrorMessageAndTheLoopGoesOn(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "teleport", `{}`)}}, turn{text: "sorry"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool())})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusCompleted || res.Final.Text() != "sorry" {
		t.Fatalf("result = %+v", res)
	}
	equal(t, "history", history(t, a, "s"), []string{"user:go", "assistant: teleport({})", "tool[c1]:Error: Unknown tool 'teleport'", "assistant:sorry"})
	tr := eventsOf[ToolResultData](evs)
	if len(tr) != 1 || !tr[0].IsError || tr[0].Content != "Error: Unknown tool 'teleport'" {
		t.Fatalf("tool_result = %+v", tr)
	}
	if sc := eventsOf[StepCompleteData](evs); sc[0].Status != "error" {
		t.Fatalf("step_complete = %+v", sc)
	}
}

func TestL5_ToolNotAllowedForTheRunIsUnknown(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1"}`)}}, turn{text: "ok"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool(), wordsTool())})
	in := userIn("s", "go")
	in.AllowedTools = []string{"words"}
	runCollect(t, a, in)
	if got := history(t, a, "s")[2]; got != "tool[c1]:Error: Unknown tool 'calc'" {
		t.Fatalf("tool message = %q", got)
	}
	if specs := m.requests()[0].Tools; len(specs) != 1 || specs[0].Name != "words" {
		t.Fatalf("offered %+v", specs)
	}
}

func TestL5_RawArgumentsAreShownAsRawAndPassedThrough(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "echo", `{"x": 1,`)}}, turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, echoTool())})
	_, evs := runCollect(t, a, userIn("s", "go"))
	tc := eventsOf[ToolCallData](evs)
	if string(tc[0].Arguments) != `{"_raw":"{\"x\": 1,"}` {
		t.Fatalf("tool_call arguments = %s", tc[0].Arguments)
	}
	if got := history(t, a, "s")[2]; got != `tool[c1]:got: {"x": 1,` {
		t.Fatalf("tool received %q", got)
	}
}

func TestL5_SchemaViolationNamesTheField(t *testing.T) {
	m := script(turn{calls: []ToolCall{
		call("c1", "calc", `{"expression":42}`),
		call("c2", "calc", `{}`),
		call("c3", "calc", `{"expression":"1+1","extra":true}`),
	}}, turn{text: "ok"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool())})
	runCollect(t, a, userIn("s", "go"))
	h := history(t, a, "s")
	equal(t, "tool messages", h[2:5], []string{
		"tool[c1]:Error: invalid arguments for tool 'calc': /expression: got number, want string",
		"tool[c2]:Error: invalid arguments for tool 'calc': /: missing property 'expression'",
		"tool[c3]:Error: invalid arguments for tool 'calc': /: additional properties 'extra' not allowed",
	})
}

func TestL5_ToolErrorsPanicsAndTimeoutsBecomeErrorMessages(t *testing.T) {
	failing := FuncTool{ToolSpec: ToolSpec{Name: "fail"}, Fn: func(context.Context, ToolCall) (ToolResult, error) {
		return ToolResult{}, errors.New("disk on fire")
	}}
	panicky := FuncTool{ToolSpec: ToolSpec{Name: "boom"}, Fn: func(context.Context, ToolCall) (ToolResult, error) {
		panic("kaboom")
	}}
	m := script(turn{calls: []ToolCall{call("c1", "fail", `{}`), call("c2", "boom", `{}`), call("c3", "wait", `{}`),
		call("c4", "calc", `{"expression":"1/0"}`)}}, turn{text: "recovered"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, failing, panicky, waitTool(nil), calcTool()),
		// The timeout bounds every call, the quick ones too: 3 s, as 20 ms (and even 1 s,
		// on a busy 2-core machine) could pass before a quick tool's goroutine had run.
		ToolPolicy: ToolPolicy{Timeout: 3 * time.Second}})
	res, _ := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusCompleted || res.Final.Text() != "recovered" {
		t.Fatalf("result = %+v", res)
	}
	equal(t, "tool messages", history(t, a, "s")[2:6], []string{
		"tool[c1]:Error: disk on fire",
		"tool[c2]:Error: tool 'boom' panicked: kaboom",
		"tool[c3]:Error: tool 'wait' timed out after 3s",
		"tool[c4]:calc: division by zero",
	})
}

func TestL5_ParallelCallsRunTogetherAndResultsKeepCallOrder(t *testing.T) {
	// Each call waits until all three have started: the run only finishes if they overlap.
	var started sync.WaitGroup
	started.Add(3)
	slow := FuncTool{ToolSpec: ToolSpec{Name: "slow"}, Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
		started.Done()
		done := make(chan struct{})
		go func() { started.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			return ErrorResult("calls did not overlap"), nil
		}
		var in struct{ N int }
		_ = json.Unmarshal([]byte(c.Arguments), &in)
		time.Sleep(time.Duration(3-in.N) * 5 * time.Millisecond) // later calls finish first
		return TextResult(fmt.Sprint("result ", in.N)), nil
	}}
	m := script(turn{calls: []ToolCall{call("a", "slow", `{"n":0}`), call("b", "slow", `{"n":1}`), call("c", "slow", `{"n":2}`)}},
		turn{text: "all done"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, slow), ToolPolicy: ToolPolicy{MaxParallel: 3}})
	_, evs := runCollect(t, a, userIn("s", "go"))
	equal(t, "history", history(t, a, "s")[2:5], []string{"tool[a]:result 0", "tool[b]:result 1", "tool[c]:result 2"})
	k := kinds(evs)
	equal(t, "tool events", after(t, k, "status:tool_running", 13), []string{"status:tool_running",
		"step_start:slow", "tool_call:slow", "step_start:slow", "tool_call:slow", "step_start:slow", "tool_call:slow",
		"tool_result:slow", "step_complete:ok", "tool_result:slow", "step_complete:ok", "tool_result:slow", "step_complete:ok"})
	var ids []string
	for _, r := range eventsOf[ToolResultData](evs) {
		ids = append(ids, r.ID)
	}
	equal(t, "result order", ids, []string{"a", "b", "c"})
}

func TestL6_PermissionHookDenies(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"2"}`)}}, turn{text: "denied"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()),
		Permission: func(_ context.Context, c ToolCall) PermissionDecision {
			return PermissionDecision{Verdict: PermitDeny, Reason: "calc is off today"}
		}})
	runCollect(t, a, userIn("s", "go"))
	if got := history(t, a, "s")[2]; got != "tool[c1]:Error: permission denied for tool 'calc': calc is off today" {
		t.Fatalf("tool message = %q", got)
	}
}

type answerApprover struct {
	ok    bool
	why   string
	calls []ToolCall
}

func (a *answerApprover) Approve(_ context.Context, c ToolCall) (Approval, error) {
	a.calls = append(a.calls, c)
	return Approval{Approved: a.ok, Reason: a.why}, nil
}

func TestL6_ApprovalApprovedRunsTheTool(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"6*7"}`)}}, turn{text: "42"})
	ap := &answerApprover{ok: true}
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Approver: ap,
		ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}})
	_, evs := runCollect(t, a, userIn("s", "go"))
	equal(t, "events", after(t, kinds(evs), "status:tool_running", 7), []string{"status:tool_running", "step_start:calc", "tool_call:calc",
		"approval_required:calc", "status:awaiting_human", "status:tool_running", "tool_result:calc"})
	if len(ap.calls) != 1 || ap.calls[0].ID != "c1" || history(t, a, "s")[2] != "tool[c1]:42" {
		t.Fatalf("approver saw %+v; history %q", ap.calls, history(t, a, "s"))
	}
}

func TestL6_ApprovalRejectedIsAnErrorMessageAndTheRunGoesOn(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"6*7"}`)}}, turn{text: "ok, I won't"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Approver: &answerApprover{why: "not now"},
		ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Final.Text() != "ok, I won't" || history(t, a, "s")[2] != "tool[c1]:Error: tool call rejected: not now" {
		t.Fatalf("result %+v history %q", res, history(t, a, "s"))
	}
	equal(t, "events", after(t, kinds(evs), "approval_required:calc", 6), []string{"approval_required:calc",
		"status:awaiting_human", "status:tool_running", "tool_result:calc!", "step_complete:error", "status:model_running"})
}

func TestL6_ApprovalWithoutApproverRejects(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1"}`)}}, turn{text: "x"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}})
	runCollect(t, a, userIn("s", "go"))
	if got := history(t, a, "s")[2]; got != "tool[c1]:Error: tool call rejected: approval required and no approver is configured" {
		t.Fatalf("tool message = %q", got)
	}
}

func TestL7_DoneToolEndsTheRunWithItsFinal(t *testing.T) {
	m := script(turn{text: "finishing", calls: []ToolCall{call("c1", "done", `{"answer":"the answer is 4"}`)}}, turn{text: "never asked"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, doneTool())})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusCompleted || res.Reason != ReasonDoneTool || res.Final.Text() != "the answer is 4" {
		t.Fatalf("result = %+v", res)
	}
	if len(m.requests()) != 1 {
		t.Fatalf("model called %d times", len(m.requests()))
	}
	equal(t, "history", history(t, a, "s"), []string{"user:go", `assistant:finishing done({"answer":"the answer is 4"})`, "tool[c1]:ok"})
	k := kinds(evs)
	equal(t, "tail", k[len(k)-3:], []string{"final", "status:completed", "run_finished:completed/done_tool"})
}

func TestL7_DoneToolWithoutFinalUsesAssistantText(t *testing.T) {
	m := script(turn{text: "here you go", calls: []ToolCall{call("c1", "done", `{}`)}})
	a := newAgent(t, Config{Model: m, Tools: tools(t, doneTool())})
	if res, _ := a.Run(context.Background(), userIn("s", "go")); res.Final.Text() != "here you go" {
		t.Fatalf("final = %q", res.Final.Text())
	}
}

func TestL8_DuplicateCallStopsWithASummary(t *testing.T) {
	same := func(id, args string) turn { return turn{calls: []ToolCall{call(id, "calc", args)}} }
	m := script(same("c1", `{"expression":"1+1"}`), same("c2", `{ "expression" : "1+1" }`), same("c3", `{"expression":"1+1"}`),
		turn{text: "I kept computing 1+1 = 2", check: func(r Request) {}})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool())})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusIncomplete || res.Reason != ReasonDuplicateCall || res.Final.Text() != "I kept computing 1+1 = 2" {
		t.Fatalf("result = %+v", res)
	}
	h := history(t, a, "s")
	equal(t, "tool messages", []string{h[2], h[4], h[6]}, []string{"tool[c1]:2", "tool[c2]:2",
		"tool[c3]:Error: tool call not executed: the run stopped (duplicate_tool_call)"})
	if n := len(eventsOf[ToolResultData](evs)); n != 2 {
		t.Fatalf("%d tool results, want 2 (the third call is not executed)", n)
	}
	if last := m.requests()[3]; len(last.Tools) != 0 {
		t.Fatalf("summary call offered tools")
	}
}

func TestL8_PerToolAndPerRunCaps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy ToolPolicy
	}{
		{"per tool", ToolPolicy{MaxCallsPerTool: 2}},
		{"per run", ToolPolicy{MaxCallsPerRun: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1"}`), call("c2", "calc", `{"expression":"2"}`),
				call("c3", "calc", `{"expression":"3"}`)}}, turn{text: "capped"})
			a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), ToolPolicy: tc.policy})
			res, _ := runCollect(t, a, userIn("s", "go"))
			if res.Status != StatusIncomplete || res.Reason != ReasonToolCallLimit {
				t.Fatalf("result = %+v", res)
			}
			equal(t, "history", history(t, a, "s")[2:], []string{"tool[c1]:1", "tool[c2]:2",
				"tool[c3]:Error: tool call not executed: the run stopped (tool_call_limit)", "assistant:capped"})
		})
	}
}

type pendingApprover struct{}

func (pendingApprover) Approve(context.Context, ToolCall) (Approval, error) {
	return Approval{}, ErrApprovalPending
}

func TestL6_ApprovalPendingInterruptsAndALaterRunResumes(t *testing.T) {
	m := script(
		turn{calls: []ToolCall{call("c1", "words", `{"text":"a b"}`), call("c2", "calc", `{"expression":"6*7"}`), call("c3", "words", `{"text":"x"}`)}},
		turn{text: "done"},
	)
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool(), wordsTool()), Approver: pendingApprover{},
		ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusInterrupted || res.Reason != ReasonApprovalRequired || res.Err != nil || res.Final != nil {
		t.Fatalf("result = %+v", res)
	}
	k := kinds(evs)
	equal(t, "tail", k[len(k)-4:], []string{"tool_call:calc", "approval_required:calc", "status:awaiting_human",
		"run_finished:interrupted/approval_required"})
	equal(t, "history", history(t, a, "s"), []string{"user:go",
		`assistant: words({"text":"a b"}) calc({"expression":"6*7"}) words({"text":"x"})`, "tool[c1]:2"})

	// The answer arrives with the next run: c2 runs, then c3, then the model.
	in := RunInput{SessionID: "s", Approvals: map[string]Approval{"c2": {Approved: true}}}
	res, _ = runCollect(t, a, in)
	if res.Status != StatusCompleted || res.Final.Text() != "done" {
		t.Fatalf("resumed = %+v", res)
	}
	equal(t, "resumed history", history(t, a, "s")[2:], []string{"tool[c1]:2", "tool[c2]:42", "tool[c3]:1", "assistant:done"})
}

func TestL6_ApprovalsInRunInputCanReject(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1"}`)}}, turn{text: "ok"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}})
	in := userIn("s", "go")
	in.Approvals = map[string]Approval{"c1": {Reason: "no thanks"}}
	runCollect(t, a, in)
	if got := history(t, a, "s")[2]; got != "tool[c1]:Error: tool call rejected: no thanks" {
		t.Fatalf("tool message %q", got)
	}
}
