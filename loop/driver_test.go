package loop

import (
	"context"
	"sync"
	"testing"
)

// recordingDriver logs every model call, tool call and store append the loop makes,
// and performs them as GoDriver would.
type recordingDriver struct {
	GoDriver
	mu  sync.Mutex
	log []string
}

func (d *recordingDriver) note(s string) {
	d.mu.Lock()
	d.log = append(d.log, s)
	d.mu.Unlock()
}

func (d *recordingDriver) StreamModel(ctx context.Context, m Model, req Request) (Stream, error) {
	d.note("model")
	return d.GoDriver.StreamModel(ctx, m, req)
}

func (d *recordingDriver) InvokeTool(ctx context.Context, t Tool, c ToolCall) (ToolResult, error) {
	d.note("tool:" + c.ID)
	return d.GoDriver.InvokeTool(ctx, t, c)
}

func (d *recordingDriver) Append(ctx context.Context, st SessionStore, session string, entries ...Entry) error {
	d.note("append")
	return d.GoDriver.Append(ctx, st, session, entries...)
}

// Everything the loop does to the outside world goes through its Driver: a driver that
// records shows each model call, each tool call and each store append of a run, and the
// store holds exactly what those appends carried.
func TestDriverPerformsEveryModelCallToolCallAndAppend(t *testing.T) {
	d := &recordingDriver{}
	st := NewMemoryStore()
	a := newAgent(t, Config{Model: script(turn{calls: []ToolCall{call("c1", "echo", `{}`), call("c2", "echo", `{}`)}}, turn{text: "done"}),
		Tools: tools(t, echoTool()), Store: st, Driver: d})
	if res, _ := runCollect(t, a, userIn("s-driver", "go")); res.Status != StatusCompleted {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	var models, toolCalls, appends int
	for _, s := range d.log {
		switch s {
		case "model":
			models++
		case "append":
			appends++
		default:
			toolCalls++
		}
	}
	if models != 2 || toolCalls != 2 {
		t.Fatalf("driver saw %d model calls and %d tool calls, want 2 and 2: %v", models, toolCalls, d.log)
	}
	// user message, assistant message, 2 tool messages, assistant message, end of run:
	// each is an append, none bypasses the driver.
	if appends < 5 {
		t.Fatalf("driver saw %d appends: %v", appends, d.log)
	}
	entries, _ := st.Load(context.Background(), "s-driver")
	if len(entries) == 0 {
		t.Fatal("nothing stored")
	}
	if d.log[0] != "append" {
		t.Fatalf("first outside action %q, want the run's first append", d.log[0])
	}
}
