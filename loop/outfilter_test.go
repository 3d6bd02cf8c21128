package loop

import (
	"strings"
	"testing"
)

// maskFilter holds its text back until Flush and replaces SECRET in it: a filter that
// needs the whole text to judge it (the worst case for a stream).
type maskFilter struct{ buf strings.Builder }

func (f *maskFilter) Write(s string) string { f.buf.WriteString(s); return "" }
func (f *maskFilter) Flush() string {
	s := strings.ReplaceAll(f.buf.String(), "SECRET", "[x]")
	f.buf.Reset()
	return s
}

func maskConfig(m Model) Config {
	return Config{Model: m, OutputFilter: func() TextFilter { return &maskFilter{} }}
}

// With Config.OutputFilter, what clients get of the model's words passes the filter:
// the text and reasoning deltas (split anywhere, SECRET in two pieces), what a filter
// held is sent before the answer's tool calls and its finish, in the model's order;
// the text, reasoning and assistant_message events carry the filtered words. The
// history keeps the answer as the model wrote it (the store has its own stage).
func TestOutputFilterAppliesToEveryEventCarryingTheModelsWords(t *testing.T) {
	m := script(
		turn{reasoning: "think SECRET", text: "call SECRET", calls: []ToolCall{call("c1", "echo", `{"text":"a"}`)}},
		turn{text: "done SECRET ok"},
	)
	cfg := maskConfig(m)
	cfg.Tools = tools(t, echoTool())
	a := newAgent(t, cfg)
	res, evs := runCollect(t, a, userIn("s", "q"))
	if res.Status != StatusCompleted {
		t.Fatalf("run: %+v", res)
	}
	var seen []string
	for _, d := range eventsOf[ModelDeltaData](evs) {
		seen = append(seen, string(d.Kind)+":"+d.Text)
	}
	equal(t, "deltas", seen, []string{"reasoning:think [x]", "text:call [x]", `tool_call:{"text`, `tool_call:":"a"}`, "finish:tool_use",
		"text:done [x] ok", "finish:end_turn"})
	for _, e := range evs {
		var words string
		switch d := e.Data.(type) {
		case *TextData:
			words = d.Text
		case *AssistantMessageData:
			words = d.Message.Text() + " " + d.Message.Reasoning
		default:
			continue
		}
		if strings.Contains(words, "SECRET") {
			t.Fatalf("%s event carries SECRET: %q", e.Type, words)
		}
	}
	texts := eventsOf[TextData](evs)
	if len(texts) != 2 || texts[0].Text != "think [x]" || texts[1].Text != "call [x]" {
		t.Fatalf("reasoning and text events: %+v", texts)
	}
	equal(t, "history", history(t, a, "s"), []string{"user:q", `assistant:call SECRET echo({"text":"a"})`, `tool[c1]:got: {"text":"a"}`, "assistant:done SECRET ok"})
}

// A retried stream resumes after the deltas clients saw (L14), through the same
// filter: what the failed attempt's filter held is not lost or repeated.
func TestOutputFilterAcrossARetriedStream(t *testing.T) {
	m := script(
		turn{text: "Hello SECRET", midErr: &ModelError{Kind: KindOverloaded, Message: "dropped"}},
		turn{text: "Hello SECRET"},
	)
	a := newAgent(t, maskConfig(m))
	_, evs := runCollect(t, a, userIn("s", "q"))
	var text string
	for _, d := range eventsOf[ModelDeltaData](evs) {
		if d.Kind == DeltaText {
			text += d.Text
		}
	}
	if text != "Hello [x]" {
		t.Fatalf("clients saw %q, want %q", text, "Hello [x]")
	}
}

// Config.Scrub changes what is stored, never what the run delivers: the run's end
// (status and run_finished, delivered once stored) reaches clients as the run made it,
// typed, however the scrub rewrote its stored copy. (A scrub that rewrote the batch in
// place turned run_finished into a map, which `serve` could not translate: no
// RUN_FINISHED frame.)
func TestScrubDoesNotChangeTheEventsDelivered(t *testing.T) {
	scrub := func(e Entry) Entry {
		if e.Event != nil {
			ev := *e.Event
			ev.Data = map[string]any{"scrubbed": true}
			e.Event = &ev
		}
		return e
	}
	a := newAgent(t, Config{Model: script(turn{text: "hi"}), Scrub: scrub})
	_, evs := runCollect(t, a, userIn("s", "q"))
	if n := len(eventsOf[RunFinishedData](evs)); n != 1 {
		t.Fatalf("%d typed run_finished events delivered, want 1: %v", n, kinds(evs))
	}
	entries, _ := a.Store().Load(t.Context(), "s")
	for _, e := range entries {
		if e.Event != nil && e.Event.Type == EventRunFinished {
			if m, ok := e.Event.Data.(map[string]any); !ok || m["scrubbed"] != true {
				t.Fatalf("stored run_finished: %#v, want the scrubbed copy", e.Event.Data)
			}
		}
	}
}
