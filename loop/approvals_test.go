package loop

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// clockDriver is GoDriver with its clock moved by an offset the test sets.
type clockDriver struct {
	GoDriver
	offset *atomic.Int64
}

func (d clockDriver) Now() time.Time { return time.Now().Add(time.Duration(d.offset.Load())) }

func requestsIn(evs []Event) []ToolCallData {
	var out []ToolCallData
	for _, e := range evs {
		if d, ok := e.Data.(*ToolCallData); ok && e.Type == EventApproval {
			out = append(out, *d)
		}
	}
	return out
}

func interrupted(t *testing.T, what string, res RunResult) {
	t.Helper()
	if res.Status != StatusInterrupted || res.Reason != ReasonApprovalRequired {
		t.Fatalf("%s: %s/%s %v, want interrupted/approval_required", what, res.Status, res.Reason, res.Err)
	}
}

// An approval names the call id and its arguments' hash. A model that reuses a call id
// (c1 twice) gets its second call asked again: the answer counted once; and the first
// answer, replayed later, does not approve the newer call with other arguments.
func TestApproval_AStaleAnswerDoesNotApproveANewerCallWithTheSameID(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1+1"}`)}},
		turn{calls: []ToolCall{call("c1", "calc", `{"expression": "2+2"}`)}}, turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Approver: pendingApprover{},
		ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}})
	res, evs := runCollect(t, a, userIn("s", "go"))
	interrupted(t, "first run", res)
	reqs := requestsIn(evs)
	h1 := ArgsHash(`{"expression":"1+1"}`)
	if len(reqs) != 1 || reqs[0].ArgsHash != h1 || reqs[0].ExpiresAt == "" {
		t.Fatalf("requests %+v, want one bound to %s with an expiry", reqs, h1)
	}
	stale := map[string]Approval{"c1": {Approved: true, ArgsHash: h1}}
	res, evs = runCollect(t, a, RunInput{SessionID: "s", Approvals: stale})
	interrupted(t, "resumed run", res)
	h2 := ArgsHash(`{"expression":"2+2"}`)
	if reqs = requestsIn(evs); len(reqs) != 1 || reqs[0].ArgsHash != h2 {
		t.Fatalf("resumed requests %+v, want the new c1 asked (%s)", reqs, h2)
	}
	res, _ = runCollect(t, a, RunInput{SessionID: "s", Approvals: stale}) // the old answer, replayed
	interrupted(t, "replayed answer", res)
	equal(t, "history", history(t, a, "s")[2:], []string{"tool[c1]:2", `assistant: calc({"expression": "2+2"})`})
	res, _ = runCollect(t, a, RunInput{SessionID: "s", Approvals: map[string]Approval{"c1": {Approved: true, ArgsHash: h2}}})
	if res.Status != StatusCompleted {
		t.Fatalf("answered run %s/%s %v", res.Status, res.Reason, res.Err)
	}
	equal(t, "history", history(t, a, "s")[3:], []string{`assistant: calc({"expression": "2+2"})`, "tool[c1]:4", "assistant:done"})
}

// editedStore is a session store whose pending call's arguments were changed after the
// approval request (an edited session): loads show the call with args instead.
type editedStore struct {
	*MemoryStore
	args string
}

func (s editedStore) Load(ctx context.Context, id string) ([]Entry, error) {
	entries, err := s.MemoryStore.Load(ctx, id)
	out := make([]Entry, len(entries))
	for i, e := range entries {
		if e.Message != nil && len(e.Message.ToolCalls) > 0 {
			m := *e.Message
			m.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
			m.ToolCalls[0].Arguments = s.args
			e.Message = &m
		}
		out[i] = e
	}
	return out, err
}

func (s editedStore) LoadHead(ctx context.Context, id string) (SessionHead, error) {
	entries, err := s.Load(ctx, id)
	return HeadOf(entries), err
}

// An answer counts for the arguments it was asked about: a call whose arguments are not
// the request's (the session changed under it), or an answer naming other arguments, is
// asked again and does not run.
func TestApproval_AChangedArgumentIsAskedAgain(t *testing.T) {
	ms := NewMemoryStore()
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1+1"}`)}}, turn{text: "done"})
	cfg := Config{Model: m, Store: ms, Tools: tools(t, calcTool()), Approver: pendingApprover{}, ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}}
	a := newAgent(t, cfg)
	res, _ := runCollect(t, a, userIn("s", "go"))
	interrupted(t, "first run", res)

	// The client approved other arguments than the call's.
	other := map[string]Approval{"c1": {Approved: true, ArgsHash: ArgsHash(`{"expression":"9*9"}`)}}
	res, evs := runCollect(t, a, RunInput{SessionID: "s", Approvals: other})
	interrupted(t, "answer for other arguments", res)
	if reqs := requestsIn(evs); len(reqs) != 1 || reqs[0].ArgsHash != ArgsHash(`{"expression":"1+1"}`) {
		t.Fatalf("requests %+v", reqs)
	}

	// The call itself changed since it was asked about: the plain yes does not carry over.
	cfg.Store = editedStore{ms, `{"expression":"1000*1000"}`}
	b := newAgent(t, cfg)
	res, evs = runCollect(t, b, RunInput{SessionID: "s", Approvals: map[string]Approval{"c1": {Approved: true}}})
	interrupted(t, "changed call", res)
	if reqs := requestsIn(evs); len(reqs) != 1 || reqs[0].ArgsHash != ArgsHash(`{"expression":"1000*1000"}`) {
		t.Fatalf("requests %+v, want the changed call asked", reqs)
	}
	for _, r := range eventsOf[ToolResultData](evs) {
		t.Fatalf("a call ran: %+v", r)
	}
}

// Two identical calls in one answer are two approvals: the yes for c1 does not run c2,
// nor does a yes for c2 given before c2 was asked; c2 asks, and its own answer runs it.
func TestApproval_ParallelCallsAreApprovedSeparately(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"6*7"}`), call("c2", "calc", `{"expression":"6*7"}`)}}, turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Approver: pendingApprover{},
		ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}, MaxParallel: 2}})
	res, evs := runCollect(t, a, userIn("s", "go"))
	interrupted(t, "first run", res)
	if reqs := requestsIn(evs); len(reqs) != 1 || reqs[0].ID != "c1" {
		t.Fatalf("requests %+v, want c1's only", reqs)
	}
	res, evs = runCollect(t, a, RunInput{SessionID: "s", Approvals: map[string]Approval{"c1": {Approved: true}, "c2": {Approved: true}}})
	interrupted(t, "resumed run", res)
	if reqs := requestsIn(evs); len(reqs) != 1 || reqs[0].ID != "c2" {
		t.Fatalf("requests %+v, want c2's", reqs)
	}
	equal(t, "history", history(t, a, "s")[2:], []string{"tool[c1]:42"})
	res, _ = runCollect(t, a, RunInput{SessionID: "s", Approvals: map[string]Approval{"c2": {Approved: true}}})
	if res.Status != StatusCompleted {
		t.Fatalf("answered %s/%s", res.Status, res.Reason)
	}
	equal(t, "history", history(t, a, "s")[2:], []string{"tool[c1]:42", "tool[c2]:42", "assistant:done"})
}

// A request past its expiry is denied, never allowed: an answer arriving late, and an
// approver still waiting when it expires.
func TestApproval_ExpiryDenies(t *testing.T) {
	off := new(atomic.Int64)
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1+1"}`)}}, turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Approver: pendingApprover{}, Driver: clockDriver{offset: off},
		ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}, ApprovalTTL: time.Hour}})
	res, _ := runCollect(t, a, userIn("s", "go"))
	interrupted(t, "first run", res)
	off.Store(int64(2 * time.Hour))
	res, _ = runCollect(t, a, RunInput{SessionID: "s", Approvals: map[string]Approval{"c1": {Approved: true}}})
	if res.Status != StatusCompleted {
		t.Fatalf("late answer %s/%s", res.Status, res.Reason)
	}
	equal(t, "history", history(t, a, "s")[2:], []string{"tool[c1]:Error: tool call rejected: the approval request expired", "assistant:done"})

	// A waiting approver: the request's deadline (an hour after a clock two hours slow)
	// has passed when it is asked, so its wait ends at once, and the call is denied.
	off.Store(int64(-2 * time.Hour))
	m2 := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1+1"}`)}}, turn{text: "done"})
	b := newAgent(t, Config{Model: m2, Tools: tools(t, calcTool()), Approver: waitingApprover{}, Driver: clockDriver{offset: off},
		ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}, ApprovalTTL: time.Hour}})
	runCollect(t, b, userIn("s2", "go"))
	equal(t, "history", history(t, b, "s2")[2:], []string{"tool[c1]:Error: tool call rejected: the approval request expired", "assistant:done"})
}

type waitingApprover struct{}

func (waitingApprover) Approve(ctx context.Context, _ ToolCall) (Approval, error) {
	<-ctx.Done()
	return Approval{}, ctx.Err()
}

type scopeApprover struct{ a Approval }

func (s scopeApprover) Approve(context.Context, ToolCall) (Approval, error) { return s.a, nil }

// An answer whose scope is unclear is a no: an unknown scope, a grant with no store for
// it, a user grant without a duration.
func TestApproval_AnUnclearScopeDenies(t *testing.T) {
	for _, c := range []struct {
		a    Approval
		want string
	}{
		{Approval{Approved: true, Scope: "forever"}, `approval scope "forever" is not once, session or user`},
		{Approval{Approved: true, Scope: ScopeSession}, `approval scope "session" needs a store for grants`},
	} {
		m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1+1"}`)}}, turn{text: "done"})
		a := newAgent(t, Config{Model: m, Tools: tools(t, calcTool()), Approver: scopeApprover{c.a},
			ToolPolicy: ToolPolicy{RequireApproval: []string{"calc"}}})
		runCollect(t, a, userIn("s", "go"))
		if got := history(t, a, "s")[2]; !strings.HasSuffix(got, c.want) || !strings.Contains(got, "rejected") {
			t.Errorf("%+v: %q, want %q", c.a, got, c.want)
		}
	}
}
