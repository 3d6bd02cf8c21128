package loop

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
)

// Tools off, from the agent's config or the run's input: the model is offered no tool
// (not even a client tool), and a call it makes anyway is refused by the pipeline's
// admit stage (tool_result refused "tools_off"): the tool never runs.
func TestToolsOffOffersNoToolAndRefusesACallMadeAnyway(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfgOff   bool
		inputOff bool
	}{{"config", true, false}, {"run input", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var ran atomic.Int32
			counted := FuncTool{ToolSpec: ToolSpec{Name: "echo"}, Fn: func(_ context.Context, c ToolCall) (ToolResult, error) {
				ran.Add(1)
				return TextResult("ran"), nil
			}}
			m := script(turn{calls: []ToolCall{call("c1", "echo", `{}`), call("c2", "mine", `{}`)}}, turn{text: "done"})
			a := newAgent(t, Config{Model: m, Tools: tools(t, counted), ToolChoice: "required", ToolsOff: tc.cfgOff})
			in := userIn("s", "go")
			in.ToolsOff = tc.inputOff
			in.ClientTools = []ToolSpec{{Name: "mine"}}
			res, evs := runCollect(t, a, in)
			if res.Status != StatusCompleted || len(res.PendingCalls) != 0 {
				t.Fatalf("status %s, pending %v", res.Status, res.PendingCalls)
			}
			for i, req := range m.requests() {
				if len(req.Tools) != 0 || req.ToolChoice != "" {
					t.Fatalf("request %d offered %d tools, tool_choice %q", i, len(req.Tools), req.ToolChoice)
				}
			}
			if ran.Load() != 0 {
				t.Fatalf("the tool ran %d times", ran.Load())
			}
			results := eventsOf[ToolResultData](evs)
			if len(results) != 2 {
				t.Fatalf("%d tool results", len(results))
			}
			for _, r := range results {
				if !r.IsError || r.Refused != RefusedToolsOff || !strings.Contains(r.Content, "tools are off for this run") {
					t.Fatalf("result %+v", r)
				}
			}
		})
	}
}

// Without the switch the same agent offers its tool and runs the call.
func TestToolsOnByDefaultOffersAndRunsTheTool(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "echo", `{}`)}}, turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, echoTool())})
	_, evs := runCollect(t, a, userIn("s", "go"))
	if n := len(m.requests()[0].Tools); n != 1 {
		t.Fatalf("offered %d tools", n)
	}
	if r := eventsOf[ToolResultData](evs); len(r) != 1 || r[0].IsError {
		t.Fatalf("results %+v", r)
	}
}
