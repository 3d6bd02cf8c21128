package loop

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// unavailableErr is a store's mark of its own failure (StoreUnavailable).
type unavailableErr struct{}

func (unavailableErr) Error() string          { return "connection refused" }
func (unavailableErr) StoreUnavailable() bool { return true }

// downStore fails every append while down, marked unavailable, and counts them.
type downStore struct {
	SessionStore
	mu      sync.Mutex
	down    bool
	refused int
	onFail  func(n int) // called (outside the lock) after the nth refused append
}

func (s *downStore) set(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

func (s *downStore) Append(ctx context.Context, session string, entries ...Entry) error {
	s.mu.Lock()
	if s.down {
		s.refused++
		n, f := s.refused, s.onFail
		s.mu.Unlock()
		if f != nil {
			f(n)
		}
		return unavailableErr{}
	}
	s.mu.Unlock()
	return s.SessionStore.Append(ctx, session, entries...)
}

// L23: with StoreOutage set, a run whose store becomes unavailable mid-run waits for it
// and writes the same batch when it answers: the run completes, its tool ran once, the
// session holds everything in order, and an error event (store_unavailable)
// says the run waited.
func TestL23_ARunWaitsForAnUnavailableStoreAndGoesOn(t *testing.T) {
	st := &downStore{SessionStore: NewMemoryStore()}
	calls := 0
	counted := FuncTool{ToolSpec: ToolSpec{Name: "count"}, Fn: func(context.Context, ToolCall) (ToolResult, error) {
		calls++
		st.set(true) // the store goes down while the tool runs: its result cannot be written
		return TextResult("counted"), nil
	}}
	st.onFail = func(n int) {
		if n == 3 {
			st.set(false) // back after three refused writes
		}
	}
	m := script(turn{calls: []ToolCall{call("c1", "count", `{}`)}}, turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, counted), Store: st, StoreOutage: time.Minute})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusCompleted || res.Final.Text() != "done" || calls != 1 {
		t.Fatalf("result %+v (err %v), tool calls %d", res, res.Err, calls)
	}
	errs := eventsOf[ErrorData](evs)
	if len(errs) != 1 || errs[0].Kind != "store_unavailable" || errs[0].Retryable ||
		!strings.Contains(errs[0].Message, "the session store was unavailable for") || !strings.Contains(errs[0].Message, "connection refused") {
		t.Fatalf("error events %+v", errs)
	}
	equal(t, "history", history(t, a, "s"), []string{"user:go", `assistant: count({})`, "tool[c1]:counted", "assistant:done"})
	stored, _ := st.Load(context.Background(), "s")
	for i, e := range stored {
		if e.Seq != int64(i+1) {
			t.Fatalf("stored seqs not gapless at %d: %d", i, e.Seq)
		}
	}
}

// Without StoreOutage the write's failure is the run's, at once, as before L23.
func TestL23_WithoutStoreOutageARunFailsOnAnUnavailableStore(t *testing.T) {
	st := &downStore{SessionStore: NewMemoryStore()}
	counted := FuncTool{ToolSpec: ToolSpec{Name: "count"}, Fn: func(context.Context, ToolCall) (ToolResult, error) {
		st.set(true)
		return TextResult("counted"), nil
	}}
	m := script(turn{calls: []ToolCall{call("c1", "count", `{}`)}}, turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, counted), Store: st})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusFailed || !errors.As(res.Err, new(unavailableErr)) {
		t.Fatalf("result %+v (err %v), want failed with the store's error", res, res.Err)
	}
	for _, e := range eventsOf[ErrorData](evs) {
		if e.Kind == "store_unavailable" {
			t.Fatalf("the run reported waiting for the store: %+v", e)
		}
	}
}

// The wait ends when the run does: an abort while the store is down ends the run
// without waiting out StoreOutage.
func TestL23_AnAbortEndsTheWaitForTheStore(t *testing.T) {
	st := &downStore{SessionStore: NewMemoryStore()}
	var a *Agent
	aborted := make(chan struct{})
	st.onFail = func(n int) {
		if n == 2 {
			a.Abort("s", "r1")
			close(aborted)
		}
	}
	counted := FuncTool{ToolSpec: ToolSpec{Name: "count"}, Fn: func(context.Context, ToolCall) (ToolResult, error) {
		st.set(true)
		return TextResult("counted"), nil
	}}
	m := script(turn{calls: []ToolCall{call("c1", "count", `{}`)}}, turn{text: "done"})
	a = newAgent(t, Config{Model: m, Tools: tools(t, counted), Store: st, StoreOutage: time.Hour})
	in := userIn("s", "go")
	in.RunID = "r1"
	done := make(chan RunResult, 1)
	go func() { res, _ := runCollect(t, a, in); done <- res }()
	<-aborted
	select {
	case res := <-done:
		if res.Status == StatusCompleted {
			t.Fatalf("result %+v, want the run ended by the abort", res)
		}
	case <-time.After(time.Minute): // a bound for a broken wait, not a timing assertion
		t.Fatal("the run still waits for the store after its abort")
	}
}
