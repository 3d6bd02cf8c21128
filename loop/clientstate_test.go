package loop

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// recordingStrategy records what it was given and answers with state (if set).
type recordingStrategy struct {
	name  string
	seen  *[]ContextInput
	state json.RawMessage
}

func (s recordingStrategy) Name() string { return s.name }
func (s recordingStrategy) Build(_ context.Context, in ContextInput) (ContextOutput, error) {
	*s.seen = append(*s.seen, in)
	return ContextOutput{State: s.state}, nil
}

// The client's state and context (AG-UI state and context) reach every context
// strategy as the run's input gave them.
func TestClientStateAndContextReachStrategies(t *testing.T) {
	var seen []ContextInput
	a := newAgent(t, Config{Model: script(turn{text: "ok"}), Context: []ContextStrategy{recordingStrategy{name: "rec", seen: &seen}}})
	in := userIn("s", "q")
	in.State = json.RawMessage(`{"page":"cart"}`)
	in.ClientContext = []ContextItem{{Description: "user timezone", Value: "Europe/Paris"}}
	runCollect(t, a, in)
	if len(seen) != 1 {
		t.Fatalf("strategy ran %d times", len(seen))
	}
	if string(seen[0].State) != `{"page":"cart"}` || len(seen[0].Context) != 1 || seen[0].Context[0].Value != "Europe/Paris" {
		t.Fatalf("strategy saw state %s context %+v", seen[0].State, seen[0].Context)
	}
}

// A strategy that returns a different state replaces it: one state event, and the next
// strategy sees the new state. The same state again, or no state, is no event; a state
// that is not JSON is an error event and changes nothing.
func TestStrategyStateChangeIsOneStateEvent(t *testing.T) {
	var seen []ContextInput
	a := newAgent(t, Config{Model: script(turn{text: "ok"}), Context: []ContextStrategy{
		recordingStrategy{name: "bad", seen: &seen, state: json.RawMessage(`{not json`)},
		recordingStrategy{name: "set", seen: &seen, state: json.RawMessage(`{"step":2}`)},
		recordingStrategy{name: "same", seen: &seen, state: json.RawMessage(` {"step":2} `)},
		recordingStrategy{name: "none", seen: &seen},
	}})
	in := userIn("s", "q")
	in.State = json.RawMessage(`{"step":1}`)
	_, evs := runCollect(t, a, in)
	states := eventsOf[StateData](evs)
	if len(states) != 1 || string(states[0].State) != `{"step":2}` {
		t.Fatalf("state events %+v, want one with {\"step\":2}", states)
	}
	if got := string(seen[3].State); got != `{"step":2}` {
		t.Fatalf("the strategy after the change saw %s", got)
	}
	errs := eventsOf[ErrorData](evs)
	if len(errs) != 1 || !strings.Contains(errs[0].Message, `"bad": state is not JSON`) {
		t.Fatalf("error events %+v", errs)
	}
}

// DefaultContext puts the client's context items at the end of the system message, or
// in a system message of their own when the agent has no system prompt, and adds
// nothing when an earlier strategy already placed them (the header line is there).
func TestDefaultContextPutsClientContextInTheSystemMessage(t *testing.T) {
	items := []ContextItem{{Description: "user timezone", Value: "Europe/Paris"}, {Value: "bare"}}
	want := ClientContextHeader + "\n- user timezone: Europe/Paris\n- bare"
	for _, tc := range []struct {
		name, system, first string
	}{
		{"with a system prompt", "Be brief.", "Be brief.\n\n" + want},
		{"without one", "", want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := script(turn{text: "ok"})
			a := newAgent(t, Config{Model: m, SystemPrompt: tc.system})
			in := userIn("s", "q")
			in.ClientContext = items
			runCollect(t, a, in)
			msgs := m.requests()[0].Messages
			if msgs[0].Role != RoleSystem || msgs[0].Text() != tc.first {
				t.Fatalf("first message %s %q, want system %q", msgs[0].Role, msgs[0].Text(), tc.first)
			}
			if len(msgs) != 2 || msgs[1].Text() != "q" {
				t.Fatalf("messages %+v", msgs)
			}
		})
	}
	placed := []Message{{Role: RoleSystem, Content: []Part{TextPart("x\n" + ClientContextHeader + "\n- mine")}}, UserMessage("q")}
	if got := withClientContext(placed, items); len(got) != 2 || got[0].Text() != placed[0].Text() {
		t.Fatalf("placed context was added again: %q", got[0].Text())
	}
}
