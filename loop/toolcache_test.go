package loop

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// L11, the tool-output cache: a cut output names its call; from the first model input
// holding one the run offers read_tool_output, which reads the stored output whole, in
// chunks on rune boundaries, and refuses what is not there. Before that the tool list is
// the agent's own.
func TestL11_ACutToolOutputIsReadBackByItsHandle(t *testing.T) {
	long := strings.Repeat("é", 6000) // 12000 bytes, two per rune
	big := FuncTool{ToolSpec: ToolSpec{Name: "big"}, Fn: func(context.Context, ToolCall) (ToolResult, error) {
		return TextResult(long), nil
	}}
	m := script(
		turn{calls: []ToolCall{call("c1", "big", `{}`)}},
		turn{calls: []ToolCall{call("c2", "big", `{}`)}},
		turn{calls: []ToolCall{call("r1", ReadToolOutput, `{"id":"c1","offset":11}`), call("r2", ReadToolOutput, `{"id":"c1","offset":8010}`),
			call("r3", ReadToolOutput, `{"id":"nope"}`), call("r4", ReadToolOutput, `{"id":"c1","offset":12000}`)}},
		turn{text: "ok"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, big), Context: []ContextStrategy{DefaultContext{MaxToolChars: 10}},
		ToolPolicy: ToolPolicy{MaxDuplicateCalls: 10}})
	res, _ := runCollect(t, a, userIn("s", "go"))
	if res.Status != StatusCompleted {
		t.Fatalf("run: %+v", res)
	}
	names := func(i int) []string {
		var out []string
		for _, s := range m.requests()[i].Tools {
			out = append(out, s.Name)
		}
		return out
	}
	if got := names(1); !slices.Equal(got, []string{"big"}) {
		t.Fatalf("tools before any cut output = %v", got)
	}
	if got := names(2); !slices.Equal(got, []string{"big", ReadToolOutput}) {
		t.Fatalf("tools once an output is cut = %v", got)
	}
	h := history(t, a, "s")
	// offset 11 is inside a rune: the chunk starts at 10.
	want1 := "tool[r1]:" + long[10:8010] + "\n" + `[… 3990 more bytes of this output not shown: read_tool_output {"id":"c1","offset":8010}]`
	want := []string{want1, "tool[r2]:" + long[8010:], `tool[r3]:Error: no tool output with id "nope" in this session`,
		`tool[r4]:Error: offset 12000 is past the end of output "c1" (12000 bytes)`}
	for _, w := range want {
		if !slices.Contains(h, w) {
			t.Fatalf("history lacks %.120q…\nhistory: %.300q", w, h)
		}
	}
}
