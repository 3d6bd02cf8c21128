package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// A [tool_groups.NAME] is offered as one tool; the host gives the loop its members and
// their [tools.NAME] costs, so a call runs on the cheapest and falls to the next when
// it fails; the tool_result names the member that ran and the group.
func TestAToolGroupFromTheManifestRunsTheCheapestMemberAndFallsToTheNext(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	cheap := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "cheap", InputSchema: schema}, Fn: func(context.Context, loop.ToolCall) (loop.ToolResult, error) {
		return loop.ToolResult{}, errors.New("quota exhausted")
	}}
	pricey := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "pricey", InputSchema: schema}, Fn: func(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
		return loop.TextResult("pricey: " + c.Arguments), nil
	}}
	h := openHost(t, `{"turns": [
	  {"expect": {"tools_offered": true}, "tool_calls": [{"id": "c1", "name": "search", "arguments": "{\"q\":\"x\"}"}]},
	  {"text": "{{result c1}}"}]}`, `
[tool_groups.search]
tools = ["pricey", "cheap"]
description = "Search"
[tools.pricey]
cost = 5
[tools.cheap]
cost = 0.5
`, Options{Tools: []loop.Tool{pricey, cheap}})
	results, calls, res := toolResults(t, h, "s", "find x")
	if len(calls) != 2 || calls[0].Name != "search" || calls[1].ID != "c1~pricey" {
		t.Fatalf("calls %+v", calls)
	}
	if len(results) != 2 || results[1].ID != "c1" || results[1].Name != "cheap" || results[1].Group != "search" || results[1].Fallback != "pricey" ||
		res.Final.Text() != `pricey: {"q":"x"}` {
		t.Fatalf("results %+v, final %q", results, res.Final.Text())
	}
}

// A group is checked when the agent is built, at its key with the file and line, and
// the manifest checks what it can alone.
func TestToolGroupsAreCheckedAtTheirKey(t *testing.T) {
	tool := func(name, schema string) loop.Tool {
		return loop.FuncTool{ToolSpec: loop.ToolSpec{Name: name, InputSchema: json.RawMessage(schema)}}
	}
	gos := []loop.Tool{tool("a", `{"type":"object"}`), tool("b", `{"type":"object"}`), tool("c", `{"type":"string"}`)}
	for table, want := range map[string]string{
		"[tool_groups.g]\ntools = [\"a\", \"nope\"]":                                       `tool_groups.g.tools: no loaded tool "nope"`,
		"[tool_groups.a]\ntools = [\"b\", \"c\"]":                                          `tool_groups.a: "a" is already a loaded tool's name`,
		"[tool_groups.g]\ntools = [\"a\", \"c\"]":                                          `tool_groups.g.tools: "c" takes other arguments than "a"`,
		"[tool_groups.g]\ntools = [\"a\", \"b\"]\n[tools.a]\nfallback = [\"b\"]":           `tool_groups.g.tools: tool "a" has a fallback list`,
		"[tool_groups.g]\ntools = [\"a\"]":                                                 `tool_groups.g.tools: a group needs at least two tools`,
		"[tool_groups.g]\ntools = [\"a\", \"a\"]":                                          `tool_groups.g.tools: tool "a" is listed twice`,
		"[tool_groups.g]\ntools = [\"a\", \"b\"]\n[tool_groups.h]\ntools = [\"b\", \"c\"]": `tool_groups.h.tools: tool "b" is already in group "g"`,
		"[tool_groups.\"g.x\"]\ntools = [\"a\", \"b\"]":                                    `group name "g.x"`,
		"[tool_groups.g]\ntools = [\"a\", \"b\"]\n[tools.a]\ncost = -1":                    `tools.a.cost: cost -1: want a number >= 0`,
		"[tool_groups.g]\ntool = [\"a\", \"b\"]":                                           `tool_groups.g.tool: unknown key (did you mean "tools"?)`,
		"[tool_groups.g]\ntools = [\"a\", \"b\"]\nrefresh = \"1h\"":                        `tool_groups.g.refresh: refresh re-reads measured values: it goes with measure`,
		"[tool_groups.g]\ntools = [\"a\", \"b\"]\nmeasure = \"1h\"\nrefresh = \"10ms\"":    `tool_groups.g.refresh: refresh 10ms: want at least 1s`,
	} {
		_, err := openHostErr(t, "", `{"turns": []}`, table+"\n", Options{Tools: gos})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "agent.toml:") {
			t.Errorf("%s:\n got %v\nwant %q", table, err, want)
		}
	}
}

// With measure, a group's members carry the success rate and mean latency of their calls
// in the stored runs of the window, read when the agent is built: here the cheap member
// failed in each of three earlier runs (a fallback stood in), so it is measured at 0,
// which puts it last in the choice (loop: cost over success rate). A member with fewer
// than three stored calls stays unmeasured.
func TestAMeasuredToolGroupWeighsTheSuccessRateOfStoredRuns(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	cheap := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "cheap", InputSchema: schema}, Fn: func(context.Context, loop.ToolCall) (loop.ToolResult, error) {
		return loop.ToolResult{}, errors.New("quota exhausted")
	}}
	pricey := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "pricey", InputSchema: schema}, Fn: func(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
		return loop.TextResult("pricey: " + c.Arguments), nil
	}}
	local := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "local", InputSchema: schema}}
	h := openHost(t, `{"per_session": true, "repeat": true, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "search", "arguments": "{\"q\":\"x\"}"}]},
	  {"text": "{{result c1}}"}]}`, `
[tool_groups.search]
tools = ["pricey", "cheap", "local"]
measure = "24h"
[tools.pricey]
cost = 5
[tools.cheap]
cost = 0.5
[tools.local]
cost = 9
`, Options{Tools: []loop.Tool{pricey, cheap, local}})
	before, err := h.toolGroups([]loop.Tool{pricey, cheap, local}, nil)
	if err != nil || len(before) != 1 || before[0].Members[1] != (loop.GroupMember{Tool: "cheap", Cost: 0.5}) {
		t.Fatalf("before any run: %+v %v", before, err)
	}
	for _, s := range []string{"s1", "s2", "s3"} {
		if _, _, res := toolResults(t, h, s, "find x"); res.Final.Text() != `pricey: {"q":"x"}` {
			t.Fatalf("%s: %q", s, res.Final.Text())
		}
	}
	after, err := h.toolGroups([]loop.Tool{pricey, cheap, local}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := after[0].Members
	if got[0].Tool != "pricey" || !got[0].Measured || got[0].SuccessRate != 1 ||
		got[1] != (loop.GroupMember{Tool: "cheap", Cost: 0.5, Measured: true, SuccessRate: 0, MeanMS: got[1].MeanMS}) ||
		got[2] != (loop.GroupMember{Tool: "local", Cost: 9}) {
		t.Fatalf("measured members %+v", got)
	}
	if _, err := openHostErr(t, "", `{"turns": []}`, "[tool_groups.g]\ntools = [\"a\", \"b\"]\nmeasure = \"-1h\"\n", Options{}); err == nil ||
		!strings.Contains(err.Error(), `tool_groups.g.measure: invalid duration "-1h": negative`) {
		t.Fatalf("a negative window: %v", err)
	}
}
