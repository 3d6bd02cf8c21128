package loop

import (
	"context"
	"encoding/json"
	"testing"
)

// A tool that needs a human's input interrupts the run (input_required stored, no
// result); the run resumed with the answer under the call's id runs the call again, and
// the tool finds the answer.
func TestInputRequired_InterruptsAndTheResumeGivesTheToolItsAnswer(t *testing.T) {
	calls := 0
	form := FuncTool{ToolSpec: ToolSpec{Name: "form", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
			calls++
			a, ok := AnswerFrom(ctx)
			if !ok {
				return ToolResult{}, &InputRequiredError{Request: InputRequest{Message: "Your name?", Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}}
			}
			var in struct{ Name string }
			_ = json.Unmarshal(a.Input, &in)
			return TextResult("hello " + in.Name), nil
		}}
	m := script(turn{calls: []ToolCall{call("f1", "form", `{}`)}}, turn{text: "done: {{result f1}}"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, form)})
	res, evs := runCollect(t, a, userIn("s", "fill it"))
	if res.Status != StatusInterrupted || res.Reason != ReasonApprovalRequired {
		t.Fatalf("first run %s/%s %v", res.Status, res.Reason, res.Err)
	}
	asks := eventsOf[InputRequiredData](evs)
	if len(asks) != 1 || asks[0].ID != "f1" || asks[0].Message != "Your name?" || string(asks[0].Schema) == "" {
		t.Fatalf("input_required events %+v", asks)
	}
	res, evs = runCollect(t, a, RunInput{SessionID: "s", Approvals: map[string]Approval{"f1": {Approved: true, Input: json.RawMessage(`{"name":"Ana"}`)}}})
	results := eventsOf[ToolResultData](evs)
	if res.Status != StatusCompleted || calls != 2 || len(results) != 1 || results[0].Content != "hello Ana" {
		t.Fatalf("resumed run %s/%s after %d calls, results %+v", res.Status, res.Reason, calls, results)
	}
}
