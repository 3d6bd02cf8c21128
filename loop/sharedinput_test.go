package loop

import (
	"context"
	"fmt"
	"testing"
)

// appendingStrategy returns its input with a message appended, once to Messages and
// once to History: what it appends must reach this call's input only.
type appendingStrategy struct{ calls *int }

func (s appendingStrategy) Name() string { return "appending" }

func (s appendingStrategy) Build(_ context.Context, in ContextInput) (ContextOutput, error) {
	*s.calls++
	note := UserMessage(fmt.Sprintf("note %d", *s.calls))
	_ = append(in.History, note) // a strategy appending to History writes no array the run keeps
	return ContextOutput{Messages: append(in.Messages, note)}, nil
}

func roleTexts(msgs []Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role) + ":" + m.Text()
		for _, c := range m.ToolCalls {
			out[i] += "+" + c.Name
		}
	}
	return out
}

// A model call's input is a slice of the run's transcript, not a copy of it (the
// first run on a long session copies none of its history): what a strategy appends to
// it is that call's alone, and an input a model was given never changes as the run
// appends to the transcript after it.
func TestModelInputSharedWithTheTranscriptIsNeverWrittenThrough(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"2+3"}`)}}, turn{text: "5"},
		turn{text: "again 5"})
	n := 0
	st := NewMemoryStore()
	a := newAgent(t, Config{SystemPrompt: "sys", Model: m, Tools: tools(t, calcTool()), Store: st,
		Context: []ContextStrategy{appendingStrategy{&n}}})
	for _, q := range []string{"2+3?", "and again?"} {
		if res, _ := runCollect(t, a, userIn("s", q)); res.Final == nil {
			t.Fatalf("run %q: %+v", q, res)
		}
	}
	reqs := m.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	equal(t, "first call", roleTexts(reqs[0].Messages), []string{"system:sys", "user:2+3?", "user:note 1"})
	equal(t, "second call", roleTexts(reqs[1].Messages), []string{"system:sys", "user:2+3?", "assistant:+calc", "tool:5", "user:note 2"})
	equal(t, "third call (the next run, loaded from the store)", roleTexts(reqs[2].Messages), []string{"system:sys", "user:2+3?",
		"assistant:+calc", "tool:5", "assistant:5", "user:and again?", "user:note 3"})
	es, err := st.Load(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	var stored []Message
	for _, e := range es {
		if e.Kind == EntryMessage {
			stored = append(stored, *e.Message)
		}
	}
	equal(t, "stored", roleTexts(stored), []string{"system:sys", "user:2+3?", "assistant:+calc", "tool:5", "assistant:5",
		"user:and again?", "assistant:again 5"})
}
