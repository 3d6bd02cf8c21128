package loop

import (
	"context"
	"testing"
)

// A tool streams its result as it comes: each piece is a tool_result_delta between the
// call's tool_call and its tool_result, live only (the store keeps none); the result it
// returns is the call's result, whole, stored and given to the model. A run with
// guardrails gets no deltas, and a context that is no tool call's sends none.
func TestAToolStreamsItsResultLiveAndTheWholeResultIsStoredAndSeen(t *testing.T) {
	sent := []bool{}
	streaming := FuncTool{ToolSpec: ToolSpec{Name: "scan"}, Fn: func(ctx context.Context, _ ToolCall) (ToolResult, error) {
		sent = append(sent, StreamResult(ctx, "one "), StreamResult(ctx, "two"))
		return TextResult("one two"), nil
	}}
	m := script(turn{calls: []ToolCall{call("c1", "scan", `{}`)}}, turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, streaming)})
	_, evs := runCollect(t, a, userIn("s", "go"))
	var order []string
	for _, e := range evs {
		switch d := e.Data.(type) {
		case *ToolCallData:
			order = append(order, "call "+d.ID)
		case *ToolResultDeltaData:
			order = append(order, "delta "+d.ID+" "+d.Text)
		case *ToolResultData:
			order = append(order, "result "+d.ID+" "+d.Content)
		}
	}
	equal(t, "events", order, []string{"call c1", "delta c1 one ", "delta c1 two", "result c1 one two"})
	if len(sent) != 2 || !sent[0] || !sent[1] {
		t.Fatalf("sent %v", sent)
	}
	if got := m.requests()[1].Messages; got[len(got)-1].Role != RoleTool || got[len(got)-1].Text() != "one two" {
		t.Fatalf("the model saw %+v", got[len(got)-1])
	}
	entries, err := a.Store().Load(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Event != nil && e.Event.Type == EventToolResultDelta {
			t.Fatalf("a delta was stored: %+v", e.Event)
		}
	}

	sent = nil
	m = script(turn{calls: []ToolCall{call("c1", "scan", `{}`)}}, turn{text: "done"})
	a = newAgent(t, Config{Model: m, Tools: tools(t, streaming), Guardrails: []Guardrail{&redactor{}}})
	if _, evs = runCollect(t, a, userIn("s", "go")); len(eventsOf[ToolResultDeltaData](evs)) != 0 || sent[0] || sent[1] {
		t.Fatalf("with guardrails: deltas %v, sent %v", eventsOf[ToolResultDeltaData](evs), sent)
	}
	if StreamResult(context.Background(), "x") {
		t.Fatal("StreamResult outside a tool call reported sent")
	}
}
