package server

import (
	"encoding/json"
	"testing"
)

// forwardedProps.noTools turns tools off for the run (loop.RunInput.ToolsOff); without
// it tools stay on.
func TestForwardedPropsNoToolsTurnsToolsOffForTheRun(t *testing.T) {
	base := RunAgentInput{ThreadID: "s", RunID: "r", Messages: []inputMessage{{ID: "1", Role: "user", Content: json.RawMessage(`"hi"`)}}}
	in := base
	in.ForwardedProps = json.RawMessage(`{"noTools":true}`)
	got, err := runInput(in)
	if err != nil || !got.ToolsOff {
		t.Fatalf("noTools: %+v, %v", got.ToolsOff, err)
	}
	if got, _ := runInput(base); got.ToolsOff {
		t.Fatal("no noTools key must leave tools on")
	}
}
