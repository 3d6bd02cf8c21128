package loop

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// noteStrategy records the tools it is shown and appends a note once per session (when
// the history has none), plus a message it must not append (a tool message).
type noteStrategy struct{ saw *[][]string }

func (noteStrategy) Name() string { return "note" }
func (s noteStrategy) Build(_ context.Context, in ContextInput) (ContextOutput, error) {
	var names []string
	for _, t := range in.Tools {
		names = append(names, t.Name)
	}
	*s.saw = append(*s.saw, names)
	for _, m := range in.History {
		if strings.HasPrefix(m.Text(), "note:") {
			return ContextOutput{}, nil
		}
	}
	return ContextOutput{Append: []Message{
		{Role: RoleTool, ToolCallID: "x", Content: []Part{TextPart("refused")}},
		UserMessage("note: be brief"),
	}}, nil
}

// A context strategy sees the tools offered on the call, and the messages it appends are
// stored in the session, sent on this call and seen by every later build (once stored,
// the strategy does not add it again); a message it may not append (a tool message) is
// refused with an error event and not stored.
func TestContextStrategiesSeeTheOfferedToolsAndMayAppendStoredEntries(t *testing.T) {
	var saw [][]string
	m := script(turn{calls: []ToolCall{call("c1", "echo", `{}`)}}, turn{text: "done"}, turn{text: "again"})
	a := newAgent(t, Config{Model: m, Tools: tools(t, echoTool(), calcTool()), Context: []ContextStrategy{noteStrategy{&saw}, DefaultContext{}}})
	_, evs := runCollect(t, a, userIn("s", "go"))
	runCollect(t, a, userIn("s", "more"))
	for i, names := range saw {
		if !slices.Equal(names, []string{"echo", "calc"}) && !slices.Equal(names, []string{"calc", "echo"}) {
			t.Fatalf("build %d saw tools %v", i, names)
		}
	}
	equal(t, "history", history(t, a, "s"), []string{"user:go", "user:note: be brief", "assistant: echo({})",
		"tool[c1]:got: {}", "assistant:done", "user:more", "assistant:again"})
	first := m.requests()[0].Messages
	if last := first[len(first)-1]; last.Text() != "note: be brief" {
		t.Fatalf("first call's input ends with %q", last.Text())
	}
	var refused int
	for _, e := range eventsOf[ErrorData](evs) {
		if e.Kind == "context" && strings.Contains(e.Message, `context strategy "note": append 0: role "tool"`) {
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("%d refusals of the tool message", refused)
	}
	// Tools off: the strategy is shown none.
	saw = nil
	in := userIn("s2", "go")
	in.ToolsOff = true
	m.turns = append(m.turns, turn{text: "ok"})
	runCollect(t, a, in)
	if len(saw) != 1 || saw[0] != nil {
		t.Fatalf("tools off: saw %v", saw)
	}
}

// deterministicTurns are the model's answers of run k of the determinism scenario: a
// tool call with a long output, then an answer; run 1 first meets a context overflow,
// so the default strategy compacts.
func deterministicTurns(k int) []turn {
	ts := []turn{{calls: []ToolCall{call("c"+string(rune('0'+k)), "echo", `{"text":"`+strings.Repeat("word ", 300)+`"}`)}}, {text: "answer"}}
	if k == 1 {
		ts = append([]turn{{err: &ModelError{Kind: KindContextOverflow, Message: "too long"}}}, ts...)
	}
	return ts
}

// determinismAgent is an agent of the scenario on store st answering with turns.
func determinismAgent(t *testing.T, s ContextStrategy, st SessionStore, gen func(string) string, turns []turn) (*Agent, *scriptModel) {
	m := script(turns...)
	return newAgent(t, Config{Model: m, Store: st, Tools: tools(t, wordsTool(), echoTool()), Context: []ContextStrategy{s},
		ContextBudget: 400, SystemPrompt: "You help.", NewID: gen}), m
}

// inputs is the JSON of every model input of m's calls.
func inputs(t *testing.T, m *scriptModel) []string {
	var out []string
	for _, r := range m.requests() {
		b, err := json.Marshal(r.Messages)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// runScenario runs runs 0..2 on session s, each with client context, on a (fresh)
// agent made for it by mk.
func runScenario(t *testing.T, mk func(run int) *Agent) {
	for k := 0; k < 3; k++ {
		in := userIn("s", "question "+string(rune('0'+k)))
		in.ClientContext = []ContextItem{{Description: "page", Value: "settings"}}
		if res, _ := runCollect(t, mk(k), in); res.Status != StatusCompleted {
			t.Fatalf("run %d: %s %v", k, res.Status, res.Err)
		}
	}
}

// Context building is deterministic for every built-in strategy (DefaultContext, with
// its tool-output trimming, budget, client context and overflow compaction): the same
// session and inputs give byte-identical model inputs when run twice, and when each run
// starts from the store in a new agent (a restart) instead of one agent going on.
func TestContextBuildingIsDeterministicForEveryBuiltInStrategy(t *testing.T) {
	for _, s := range []ContextStrategy{DefaultContext{}, DefaultContext{MaxToolChars: 100}} {
		var all []turn
		for k := 0; k < 3; k++ {
			all = append(all, deterministicTurns(k)...)
		}
		var got [3][]string
		for i := 0; i < 2; i++ { // one agent going on, twice
			a, m := determinismAgent(t, s, NewMemoryStore(), counterIDs(), all)
			runScenario(t, func(int) *Agent { return a })
			got[i] = inputs(t, m)
		}
		st, gen := NewMemoryStore(), counterIDs() // a new agent per run, on one store
		for k := 0; k < 3; k++ {
			a, m := determinismAgent(t, s, st, gen, deterministicTurns(k))
			in := userIn("s", "question "+string(rune('0'+k)))
			in.ClientContext = []ContextItem{{Description: "page", Value: "settings"}}
			if res, _ := runCollect(t, a, in); res.Status != StatusCompleted {
				t.Fatalf("restart run %d: %s %v", k, res.Status, res.Err)
			}
			got[2] = append(got[2], inputs(t, m)...)
		}
		equal(t, "model inputs, run twice", got[1], got[0])
		equal(t, "model inputs across restarts", got[2], got[0])
		joined := strings.Join(got[0], "\n")
		for _, want := range []string{"context compacted", "context trimmed", "Context from the client"} {
			if len(got[0]) != 7 || !strings.Contains(joined, want) {
				t.Fatalf("the scenario did not exercise %q: %d calls", want, len(got[0]))
			}
		}
	}
}
