package loop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// reportingTool logs at two levels and reports progress, as a plugin does through the host.
func reportingTool(name string, n int) Tool {
	return FuncTool{ToolSpec: ToolSpec{Name: name}, Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
		for i := 1; i <= n; i++ {
			if !Notify(ctx, ProgressData{Plugin: name, Progress: float64(i), Total: float64(n), Message: "step"}) {
				return ErrorResult("Notify: not in a run"), nil
			}
		}
		Notify(ctx, PluginLogData{Plugin: name, Level: "warning", Message: "careful"})
		Notify(ctx, PluginLogData{Plugin: name, Level: "LOUD", Message: "odd level"})
		return TextResult("done " + name), nil
	}}
}

func TestPluginReportsAreEventsOfTheRunBetweenCallAndResult(t *testing.T) {
	store := NewMemoryStore()
	m := script(turn{calls: []ToolCall{call("c1", "r", `{}`)}}, turn{text: "ok"})
	a := newAgent(t, Config{Model: m, Store: store, Tools: tools(t, reportingTool("r", 2))})
	res, evs := runCollect(t, a, userIn("s1", "go"))
	if res.Status != StatusCompleted {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	equal(t, "events", after(t, kinds(evs), "tool_call:r", 6), []string{
		"tool_call:r", "progress", "progress", "plugin_log", "plugin_log", "tool_result:r"})
	logs := eventsOf[PluginLogData](evs)
	if logs[0] != (PluginLogData{Plugin: "r", Level: "warning", Message: "careful"}) || logs[1].Level != "info" {
		t.Fatalf("logs %+v (an unknown level must become info)", logs)
	}
	if p := eventsOf[ProgressData](evs); p[1] != (ProgressData{Plugin: "r", Progress: 2, Total: 2, Message: "step"}) {
		t.Fatalf("progress %+v", p)
	}
	for i, e := range evs { // L17: one numbering, reports included
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d (%s) has seq %d", i, e.Type, e.Seq)
		}
	}
	entries, _ := store.Load(context.Background(), "s1")
	var stored []string
	for _, en := range entries {
		if en.Kind == EntryEvent && (en.Event.Type == EventPluginLog || en.Event.Type == EventProgress) {
			stored = append(stored, string(en.Event.Type))
		}
	}
	equal(t, "stored reports", stored, []string{"progress", "progress", "plugin_log", "plugin_log"})
}

func TestPluginReportsFromParallelCallsAreSerialised(t *testing.T) {
	var calls []ToolCall
	var ts []Tool
	for i := range 4 {
		name := fmt.Sprintf("r%d", i)
		calls = append(calls, call("c"+name, name, `{}`))
		ts = append(ts, reportingTool(name, 50))
	}
	m := script(turn{calls: calls}, turn{text: "ok"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, ts...), ToolPolicy: ToolPolicy{MaxParallel: 4}})
	var mu sync.Mutex
	inEmit := false
	var evs []Event
	res, err := a.RunWith(context.Background(), userIn("s1", "go"), func(e Event) {
		mu.Lock()
		if inEmit {
			panic("emit called concurrently")
		}
		inEmit = true
		mu.Unlock()
		evs = append(evs, e)
		mu.Lock()
		inEmit = false
		mu.Unlock()
	})
	if err != nil || res.Status != StatusCompleted {
		t.Fatalf("%s: %v", res.Status, err)
	}
	if n := len(eventsOf[ProgressData](evs)); n != 200 {
		t.Fatalf("%d progress events, want 200", n)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d (%s) has seq %d: emits out of order", i, e.Type, e.Seq)
		}
	}
}

func TestPluginReportsAreBoundedPerRun(t *testing.T) {
	long := strings.Repeat("é", maxNoticeBytes) // 2 bytes a rune: cut mid-way
	flood := FuncTool{ToolSpec: ToolSpec{Name: "flood"}, Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
		for range maxNotices + 500 {
			Notify(ctx, PluginLogData{Plugin: "flood", Level: "info", Message: long})
		}
		return TextResult("flooded"), nil
	}}
	m := script(turn{calls: []ToolCall{call("c1", "flood", `{}`)}}, turn{text: "ok"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, flood)})
	_, evs := runCollect(t, a, userIn("s1", "go"))
	logs := eventsOf[PluginLogData](evs)
	if len(logs) != maxNotices+1 {
		t.Fatalf("%d plugin_log events, want %d and one notice", len(logs), maxNotices+1)
	}
	if last := logs[maxNotices]; last.Plugin != "agenthost" || last.Level != "warning" {
		t.Fatalf("last %+v", last)
	}
	if msg := logs[0].Message; len(msg) > maxNoticeBytes+20 || !strings.HasSuffix(msg, "… (cut)") || strings.ContainsRune(msg, '\uFFFD') {
		t.Fatalf("message not cut cleanly: %d bytes, tail %q", len(msg), msg[len(msg)-12:])
	}
}

func TestNotifyOutsideARunOrAfterItReportsFalse(t *testing.T) {
	if Notify(context.Background(), PluginLogData{Level: "info"}) {
		t.Fatal("Notify without a run reported true")
	}
	var kept context.Context
	grab := FuncTool{ToolSpec: ToolSpec{Name: "grab"}, Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
		kept = ctx
		if Notify(ctx, "not a report") {
			return ErrorResult("accepted a string"), nil
		}
		return TextResult("ok"), nil
	}}
	m := script(turn{calls: []ToolCall{call("c1", "grab", `{}`)}}, turn{text: "ok"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, grab)})
	res, evs := runCollect(t, a, userIn("s1", "go"))
	if res.Status != StatusCompleted || eventsOf[ToolResultData](evs)[0].IsError {
		t.Fatalf("%s %+v", res.Status, eventsOf[ToolResultData](evs))
	}
	if Notify(kept, PluginLogData{Level: "info", Message: "late"}) {
		t.Fatal("a report after run_finished was accepted")
	}
}
