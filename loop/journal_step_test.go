package loop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
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
