package host

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// testClock is a clock a test moves (Options.Clock).
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// A measured group's values are read again while the agent lives, at most every refresh:
// "cheap" is chosen while it is unmeasured; it then fails in three runs (stored, a
// fallback standing in each time), but the choice keeps the values it has until the
// interval passed on the host's clock; the first choice after it still uses them and
// starts the refresh in the background, and once the refresh is done the next choice
// runs on "pricey" first (cheap, measured at 0, is last).
func TestAMeasuredToolGroupIsMeasuredAgainAfterItsRefreshInterval(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	var failing atomic.Bool
	cheap := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "cheap", InputSchema: schema}, Fn: func(context.Context, loop.ToolCall) (loop.ToolResult, error) {
		if failing.Load() {
			return loop.ToolResult{}, errors.New("quota exhausted")
		}
		return loop.TextResult("cheap"), nil
	}}
	pricey := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "pricey", InputSchema: schema}, Fn: func(context.Context, loop.ToolCall) (loop.ToolResult, error) {
		return loop.TextResult("pricey"), nil
	}}
	clock := &testClock{t: time.Now()}
	h := openHost(t, `{"per_session": true, "repeat": true, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "search", "arguments": "{\"q\":\"x\"}"}]},
	  {"text": "{{result c1}}"}]}`, `
[tool_groups.search]
tools = ["cheap", "pricey"]
measure = "24h"
refresh = "10m"
[tools.cheap]
cost = 1
[tools.pricey]
cost = 2
`, Options{Tools: []loop.Tool{cheap, pricey}, Clock: clock.now})
	first := func(session string) string { // the member a run's call of search ran on first
		t.Helper()
		results, _, res := toolResults(t, h, session, "find x")
		for _, r := range results {
			if r.ID == "c1" && res.Status == loop.StatusCompleted { // a stand-in's is c1~NAME
				return r.Name
			}
		}
		t.Fatalf("%s: %s/%s %+v", session, res.Status, res.Reason, results)
		return ""
	}
	if got := first("s0"); got != "cheap" {
		t.Fatalf("unmeasured: ran on %s first", got)
	}
	failing.Store(true)
	for _, s := range []string{"s1", "s2", "s3"} {
		if got := first(s); got != "cheap" {
			t.Fatalf("%s: ran on %s first, the values of the build still say cheap", s, got)
		}
	}
	clock.add(9 * time.Minute) // within the interval: no refresh
	if got := first("s4"); got != "cheap" {
		t.Fatalf("before the interval: ran on %s first", got)
	}
	h.refreshes.wg.Wait()
	if got := first("s5"); got != "cheap" {
		t.Fatalf("no refresh was due, yet the choice moved to %s", got)
	}
	clock.add(2 * time.Minute) // past it: this choice starts the refresh, on the values it has
	if got := first("s6"); got != "cheap" {
		t.Fatalf("the choice that starts the refresh ran on %s first", got)
	}
	h.refreshes.wg.Wait()
	if got := first("s7"); got != "pricey" {
		t.Fatalf("after the refresh: ran on %s first, want pricey (6 of cheap's 7 stored calls failed)", got)
	}
}

// Close cancels and waits for the refreshes under way and starts none after: a refresh
// asked of a closed host does not run.
func TestClosingTheHostEndsItsRefreshes(t *testing.T) {
	h := openHost(t, `{"turns": []}`, "", Options{})
	started := make(chan struct{})
	var ended atomic.Bool
	if !h.refreshes.start(func(ctx context.Context) {
		close(started)
		<-ctx.Done() // a refresh reading a slow store, until Close cancels it
		ended.Store(true)
	}) {
		t.Fatal("a refresh was refused before Close")
	}
	<-started
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if !ended.Load() {
		t.Fatal("Close returned before its refresh ended")
	}
	if h.refreshes.start(func(context.Context) { t.Error("a refresh ran after Close") }) {
		t.Fatal("a refresh was started after Close")
	}
}
