package loop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// batchStore records what each write carried: entries by kind, and the run record
// when one came with it.
type batchStore struct {
	*MemoryStore
	mu      sync.Mutex
	batches []string
}

func (s *batchStore) Append(ctx context.Context, session string, es ...Entry) error {
	var parts []string
	for _, e := range es {
		switch {
		case e.Message != nil:
			parts = append(parts, "msg:"+string(e.Message.Role))
		case e.Event != nil:
			parts = append(parts, string(e.Event.Type))
		}
	}
	s.mu.Lock()
	s.batches = append(s.batches, strings.Join(parts, " "))
	s.mu.Unlock()
	return s.MemoryStore.Append(ctx, session, es...)
}

func (s *batchStore) AppendRun(ctx context.Context, r RunRecord, es ...Entry) error {
	if err := s.MemoryStore.SaveRun(ctx, r); err != nil {
		return err
	}
	s.mu.Lock()
	s.batches = append(s.batches, fmt.Sprintf("run:%q", r.Status))
	s.mu.Unlock()
	return s.Append(ctx, r.SessionID, es...)
}

// L21: a run writes once per step: what it produced since the last outside call is
// stored just before the next model call or tool call, and once at the end, run_finished
// included; the run record goes with the first write and with the last.
func TestL21_OneWritePerStepBeforeEachOutsideCall(t *testing.T) {
	st := &batchStore{MemoryStore: NewMemoryStore()}
	d := &recordingDriver{}
	a := newAgent(t, Config{Model: script(turn{calls: []ToolCall{call("c1", "echo", `{}`)}}, turn{text: "done"}),
		Tools: tools(t, echoTool()), Store: st, Driver: d})
	if res, _ := runCollect(t, a, userIn("s", "go")); res.Status != StatusCompleted {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	equal(t, "driver", d.log, []string{"append", "model", "append", "tool:c1", "append", "model", "append"})
	equal(t, "writes", st.batches, []string{
		`run:""`, "run_started status msg:user status", // before the first model call
		"msg:assistant assistant_message usage status step_start tool_call", // before the tool
		"tool_result step_complete msg:tool status",                         // before the second model call
		`run:"completed"`, "msg:assistant assistant_message usage final status run_finished", // the end
	})
}

// leaseEndingStore is a RunAppender and Leaser whose final AppendRun releases the
// run's lease, as the contract says; it counts the releases asked of it directly.
type leaseEndingStore struct {
	*MemoryStore
	mu              sync.Mutex
	leases          map[string]Lease // by run id
	directReleases  int
	releasedWithEnd int
}

func (s *leaseEndingStore) AcquireLease(ctx context.Context, l Lease, alive func(Lease) bool) (Lease, error) {
	held, err := s.MemoryStore.AcquireLease(ctx, l, alive)
	if err == nil {
		s.mu.Lock()
		s.leases[l.RunID] = l
		s.mu.Unlock()
	}
	return held, err
}

func (s *leaseEndingStore) ReleaseLease(ctx context.Context, l Lease) error {
	s.mu.Lock()
	s.directReleases++
	s.mu.Unlock()
	return s.MemoryStore.ReleaseLease(ctx, l)
}

func (s *leaseEndingStore) AppendRun(ctx context.Context, r RunRecord, es ...Entry) error {
	if err := s.MemoryStore.SaveRun(ctx, r); err != nil {
		return err
	}
	if err := s.MemoryStore.Append(ctx, r.SessionID, es...); err != nil {
		return err
	}
	if r.Status != "" {
		s.mu.Lock()
		l := s.leases[r.ID]
		s.releasedWithEnd++
		s.mu.Unlock()
		return s.MemoryStore.ReleaseLease(ctx, l)
	}
	return nil
}

// L21: with a store that ends the lease with the run's final record, the run's end is
// one write: the loop does not release the lease again.
func TestL21_TheFinalRecordEndsTheLeaseInTheSameWrite(t *testing.T) {
	st := &leaseEndingStore{MemoryStore: NewMemoryStore(), leases: map[string]Lease{}}
	a := newAgent(t, Config{Model: script(turn{text: "one"}, turn{text: "two"}), Store: st})
	for _, run := range []string{"r1", "r2"} {
		in := userIn("s", "go")
		in.RunID = run
		if res, _ := runCollect(t, a, in); res.Status != StatusCompleted {
			t.Fatalf("run %s: %s %v", run, res.Status, res.Err)
		}
	}
	if st.releasedWithEnd != 2 || st.directReleases != 0 {
		t.Fatalf("released with the end %d, directly %d; want 2, 0", st.releasedWithEnd, st.directReleases)
	}
	other := Lease{SessionID: "s", RunID: "x", PID: 1, Instance: "another", Heartbeat: time.Now()}
	if _, err := st.MemoryStore.AcquireLease(context.Background(), other, func(Lease) bool { return true }); err != nil {
		t.Fatalf("the session is still leased: %v", err)
	}
}

// L21: an approval request is shown only once every earlier result is stored, and it
// is stored itself before the wait: a process killed while a human decides loses no
// result a client has seen.
func TestL21_ResultsAreStoredBeforeAnApprovalIsShown(t *testing.T) {
	st := NewMemoryStore()
	a := newAgent(t, Config{Model: script(turn{calls: []ToolCall{call("k1", "echo", `{}`), call("k2", "echo", `{}`)}}, turn{text: "done"}),
		Tools: tools(t, echoTool()), Store: st, Approver: &answerApprover{ok: true}, ToolPolicy: ToolPolicy{RequireApproval: []string{"echo"}}})
	stored := func() (results []string) {
		es, _ := st.Load(context.Background(), "s")
		for _, e := range es {
			if e.Message != nil && e.Message.Role == RoleTool {
				results = append(results, e.Message.ToolCallID)
			}
		}
		return results
	}
	var seen []string
	res, err := a.RunWith(context.Background(), userIn("s", "go"), func(e Event) {
		if e.Type == EventApproval {
			seen = append(seen, fmt.Sprintf("%s asked, stored %v", e.Data.(*ToolCallData).ID, stored()))
		}
	})
	if err != nil || res.Status != StatusCompleted {
		t.Fatalf("status %s: %v", res.Status, err)
	}
	equal(t, "when asked", seen, []string{"k1 asked, stored []", "k2 asked, stored [k1]"})
}
