package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// A tool's streamed result pieces and a runtime's preparation reach an AG-UI client as
// CUSTOM events with their data (agenthost.tool_result_delta, agenthost.runtime).
func TestTranslateToolResultDeltasAndRuntimesAreCustomEvents(t *testing.T) {
	got := translateAll(t,
		ev(loop.EventRuntime, loop.RuntimeData{Name: "web", Ready: true, DurationMS: 3}),
		ev(loop.EventToolResultDelta, loop.ToolResultDeltaData{ID: "c1", Text: "one "}),
	)
	equalLines(t, "AG-UI events", got, []string{
		`{"type":"CUSTOM","timestamp":1700000000000,"name":"agenthost.runtime","value":{"name":"web","ready":true,"duration_ms":3}}`,
		`{"type":"CUSTOM","timestamp":1700000000000,"name":"agenthost.tool_result_delta","value":{"id":"c1","text":"one "}}`,
	})
}

// forwardedProps.runtimeInit and hints become the run's RuntimeInit and RuntimeHints;
// more than 64 hints are refused.
func TestForwardedPropsCarryRuntimeInitAndHints(t *testing.T) {
	base := RunAgentInput{ThreadID: "s", RunID: "r", Messages: []inputMessage{{ID: "1", Role: "user", Content: json.RawMessage(`"hi"`)}}}
	in := base
	in.ForwardedProps = json.RawMessage(`{"runtimeInit":{"web":{"token":"t"}},"hints":{"region":"eu"}}`)
	got, err := runInput(in)
	if err != nil || string(got.RuntimeInit["web"]) != `{"token":"t"}` || got.RuntimeHints["region"] != "eu" {
		t.Fatalf("runtime init %v, hints %v, %v", got.RuntimeInit, got.RuntimeHints, err)
	}
	var many []string
	for i := range 65 {
		many = append(many, fmt.Sprintf(`"k%d":"v"`, i))
	}
	in.ForwardedProps = json.RawMessage(`{"hints":{` + strings.Join(many, ",") + `}}`)
	if _, err := runInput(in); err == nil || !strings.Contains(err.Error(), "at most 64") {
		t.Fatalf("65 hints: %v", err)
	}
}
