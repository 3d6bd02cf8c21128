package loop

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A tool group is offered as one tool; a call of it runs on the cheapest member, the
// others standing in when it fails (in cost order), and a member that failed in this run
// is tried last afterwards. The tool_result names the member that ran and the group. A
// member is not offered on its own: a call naming it is an unknown tool.
func TestAToolGroupCallRunsOnTheCheapestAvailableMemberAndFallsToTheNext(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	ran := []string{}
	member := func(name string, fail bool) Tool {
		return FuncTool{ToolSpec: ToolSpec{Name: name, Description: name + " search", InputSchema: schema}, Fn: func(_ context.Context, c ToolCall) (ToolResult, error) {
			ran = append(ran, name)
			if fail {
				return ToolResult{}, errors.New(name + " is down")
			}
			return TextResult(name + " found " + c.Arguments), nil
		}}
	}
	other := FuncTool{ToolSpec: ToolSpec{Name: "other"}, Fn: func(context.Context, ToolCall) (ToolResult, error) { return TextResult("o"), nil }}
	m := script(
		turn{calls: []ToolCall{call("c1", "search", `{"q":"x"}`)}},
		turn{calls: []ToolCall{call("c2", "search", `{"q":"y"}`), call("c3", "cheap", `{"q":"z"}`)}},
		turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, other, member("pricey", false), member("cheap", true), member("local", false)),
		ToolGroups: []ToolGroup{{Name: "search", Members: []GroupMember{{Tool: "pricey", Cost: 5}, {Tool: "cheap", Cost: 1}, {Tool: "local", Cost: 3}}}}})
	res, evs := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusCompleted {
		t.Fatalf("run %s %v", res.Status, res.Err)
	}
	var offered []string
	for _, s := range m.requests()[0].Tools {
		offered = append(offered, s.Name+":"+s.Description+":"+string(s.InputSchema))
	}
	equal(t, "offered", offered, []string{"other::", "search:pricey search:" + string(schema)})
	equal(t, "ran", ran, []string{"cheap", "local", "local"})
	r := eventsOf[ToolResultData](evs)
	if len(r) != 4 || r[0].ID != "c1~local" || r[1].ID != "c1" || r[1].Name != "cheap" || r[1].Group != "search" || r[1].Fallback != "local" ||
		r[1].Content != `local found {"q":"x"}` {
		t.Fatalf("first call: %+v", r)
	}
	if r[2].ID != "c2" || r[2].Name != "local" || r[2].Group != "search" || r[2].Fallback != "" || r[2].Content != `local found {"q":"y"}` {
		t.Fatalf("second call (cheap failed before: tried last): %+v", r[2])
	}
	if h := history(t, a, "s"); h[2] != `tool[c1]:local found {"q":"x"}` {
		t.Fatalf("history %q", h)
	}
	var names []string
	for _, msg := range m.requests()[1].Messages {
		if msg.Role == RoleTool {
			names = append(names, msg.Name)
		}
	}
	equal(t, "the tool message answers the name the model called", names, []string{"search"})
	if r[3].ID != "c3" || !strings.Contains(r[3].Content, "Unknown tool 'cheap'") {
		t.Fatalf("a member called by name: %+v", r[3])
	}
}

// A direct call (a person's, a workflow's) may name a group's member, which only the
// model does not see; it runs on that member, with no choice made.
func TestADirectCallMayNameAToolGroupsMember(t *testing.T) {
	echo := func(name string) Tool {
		return FuncTool{ToolSpec: ToolSpec{Name: name}, Fn: func(context.Context, ToolCall) (ToolResult, error) { return TextResult(name), nil }}
	}
	a := newAgent(t, Config{Model: script(), Tools: tools(t, echo("x"), echo("y")),
		ToolGroups: []ToolGroup{{Name: "g", Members: []GroupMember{{Tool: "x", Cost: 2}, {Tool: "y", Cost: 1}}}}})
	for name, want := range map[string]string{"y": "y", "x": "x", "g": "y"} {
		res, run := a.DirectCall(context.Background(), CallInput{SessionID: "s" + name, Call: ToolCall{Name: name, Arguments: "{}"}}, nil)
		if run.Status != StatusCompleted || res.Text() != want {
			t.Errorf("direct call of %s: %s %q", name, run.Status, res.Text())
		}
	}
}

// Measured success rates and latencies (from stored runs) enter the choice beside the
// declared cost: the lowest expected cost of a success (cost over success rate) first,
// then the higher rate, then the lower mean latency; an unmeasured member counts as
// always succeeding; one that never succeeds comes last.
func TestAToolGroupChoosesByCostPerSuccessThenRateThenLatency(t *testing.T) {
	ms := func(ms ...GroupMember) []string {
		r := &run{groupMembers: nil}
		for _, m := range ms {
			r.groupMembers = append(r.groupMembers, ToolSpec{Name: m.Tool})
		}
		return r.chooseMembers(&ToolGroup{Name: "g", Members: ms})
	}
	// cheap but flaky (1 / 0.25 = 4) after reliable and pricier (3 / 1 = 3)
	equal(t, "cost per success", ms(GroupMember{Tool: "flaky", Cost: 1, Measured: true, SuccessRate: 0.25},
		GroupMember{Tool: "steady", Cost: 3, Measured: true, SuccessRate: 1}), []string{"steady", "flaky"})
	// no costs declared: the rate decides, then the latency
	equal(t, "rate, then latency", ms(GroupMember{Tool: "slow", Measured: true, SuccessRate: 1, MeanMS: 900},
		GroupMember{Tool: "shaky", Measured: true, SuccessRate: 0.5, MeanMS: 10},
		GroupMember{Tool: "fast", Measured: true, SuccessRate: 1, MeanMS: 20}), []string{"fast", "slow", "shaky"})
	// never succeeded (even at no cost) last; unmeasured counts as rate 1, no latency: declared order
	equal(t, "never and unmeasured", ms(GroupMember{Tool: "dead", Measured: true, SuccessRate: 0},
		GroupMember{Tool: "new"}, GroupMember{Tool: "known", Measured: true, SuccessRate: 1, MeanMS: 5}), []string{"new", "known", "dead"})
}
