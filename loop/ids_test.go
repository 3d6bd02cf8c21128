package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// counterIDs is a deterministic id generator: prefix and a per-generator counter.
func counterIDs() func(string) string {
	n := 0
	return func(prefix string) string { n++; return fmt.Sprintf("%s%04d", prefix, n) }
}

// idRun makes a fresh agent with gen (nil: the default generator), a fixed clock and a
// scripted model, runs a session with a tool call and a direct call on a new session,
// and returns every event as JSON.
func idRun(t *testing.T, gen func(string) string) []string {
	t.Helper()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := script(turn{calls: []ToolCall{call("c1", "echo", `{"x":1}`)}}, turn{text: "done"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, echoTool()), NewID: gen,
		Driver: testDriver{now: func() time.Time { return at }}})
	var out []string
	emit := func(e Event) {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	if res, err := a.RunWith(context.Background(), RunInput{Messages: []Message{UserMessage("go")}}, emit); err != nil || res.Status != StatusCompleted {
		t.Fatalf("run: %s %v", res.Status, err)
	}
	if _, res := a.DirectCall(context.Background(), CallInput{Call: ToolCall{Name: "echo", Arguments: `{}`}}, emit); res.Status != StatusCompleted {
		t.Fatalf("direct call: %s %v", res.Status, res.Err)
	}
	return out
}

// Two runs with the same injected id generator, clock and scripted model produce
// byte-identical event streams, ids included; the ids are the generator's. With the
// default generator two such runs differ in their ids.
func TestInjectedIDGeneratorMakesTwoRunsEventStreamsIdentical(t *testing.T) {
	first, second := idRun(t, counterIDs()), idRun(t, counterIDs())
	equal(t, "event stream", second, first)
	all := strings.Join(first, "\n")
	for _, id := range []string{`"session_id":"ses_0001"`, `"run_id":"run_0002"`, `"session_id":"ses_0004"`, `"run_id":"run_0005"`, `"id":"call_0003"`} {
		if !strings.Contains(all, id) {
			t.Errorf("no %s in\n%s", id, all)
		}
	}
	if a, b := strings.Join(idRun(t, nil), "\n"), strings.Join(idRun(t, nil), "\n"); a == b {
		t.Fatal("the default generator gave two runs the same ids")
	}
}
