package loop

import "testing"

// A run's tool choice goes with its first model call only; later calls are auto, so
// "required" cannot keep the model from answering. RunInput overrides Config.
func TestToolChoiceAppliesToTheFirstCallOnly(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "echo", `{}`)}}, turn{text: "done"},
		turn{calls: []ToolCall{call("c2", "echo", `{}`)}}, turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, echoTool()), ToolChoice: "required"})
	if res, _ := runCollect(t, a, userIn("s1", "go")); res.Status != StatusCompleted {
		t.Fatalf("%s", res.Status)
	}
	in := userIn("s2", "go")
	in.ToolChoice = "echo"
	runCollect(t, a, in)
	var got []string
	for _, r := range m.requests() {
		got = append(got, r.ToolChoice)
	}
	equal(t, "tool_choice per call", got, []string{"required", "", "echo", ""})
}
