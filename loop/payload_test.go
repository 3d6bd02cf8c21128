package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// checkPayload fails the test unless e's Data is a pointer to the payload struct of its
// type: the one shape every event has, live or decoded (docs/loop.md#events).
func checkPayload(t *testing.T, e Event) {
	t.Helper()
	decode, ok := eventData[e.Type]
	if !ok {
		t.Fatalf("event %d: unknown type %q", e.Seq, e.Type)
	}
	want, _ := decode(nil)
	if reflect.TypeOf(e.Data) != reflect.TypeOf(want) || reflect.ValueOf(e.Data).IsNil() {
		t.Fatalf("event %d (%s): data is %T, want %T", e.Seq, e.Type, e.Data, want)
	}
}

// The JSON of an event is the same whether its payload is a value (as before payloads
// became pointers) or a pointer, for every event type, and decoding it gives back a
// pointer to the same payload (stored events read like live ones).
func TestEventPayloadPointersEncodeLikeValuesAndDecodeToPointers(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 5, 0, 0, 123456789, time.UTC)
	samples := map[EventType]any{
		EventRunFinished: RunFinishedData{Status: StatusCompleted, Reason: ReasonEndTurn, Usage: Usage{PromptTokens: 3},
			PendingCalls: []ToolCall{{ID: "c1", Name: "calc", Arguments: `{"a":1}`}}, Metrics: RunMetrics{Steps: 1}},
		EventToolCall:         ToolCallData{ID: "c1", Name: "calc", Arguments: json.RawMessage(`{"a":1}`)},
		EventAssistantMessage: AssistantMessageData{Message: Message{Role: RoleAssistant, Content: []Part{TextPart("hé")}}, StopReason: StopEndTurn},
		EventModelDelta:       ModelDeltaData{CallIndex: 1, Seq: 2, Kind: DeltaToolCall, Text: `{"a"`, ToolCall: ToolCallRef{Index: 1, ID: "c1"}},
		EventFinal:            FinalData{Text: "5", Output: json.RawMessage(`{"n":5}`)},
	}
	for typ, decode := range eventData {
		zero, _ := decode(nil)
		value := reflect.ValueOf(zero).Elem().Interface() // the payload as a value
		if s, ok := samples[typ]; ok {
			value = s
		}
		ptr := reflect.New(reflect.TypeOf(value))
		ptr.Elem().Set(reflect.ValueOf(value))
		ev := Event{Seq: 4, Time: t0, SessionID: "s", RunID: "r", Agent: "a", Type: typ, TraceID: "t", Path: "a/b"}
		ev.Data = value
		byValue, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		ev.Data = ptr.Interface()
		byPointer, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(byValue, byPointer) {
			t.Fatalf("%s: pointer payload encodes as\n%s\nvalue as\n%s", typ, byPointer, byValue)
		}
		var back Event
		if err := json.Unmarshal(byPointer, &back); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		checkPayload(t, back)
		if _, ok := samples[typ]; ok && !reflect.DeepEqual(back.Data, ev.Data) { // a zero RawMessage comes back as null
			t.Fatalf("%s: decoded %#v, want %#v", typ, back.Data, ev.Data)
		}
		again, _ := json.Marshal(back)
		if !bytes.Equal(again, byValue) {
			t.Fatalf("%s: re-encoded\n%s\nwant\n%s", typ, again, byValue)
		}
	}
}

// roundsModel asks for the add tool rounds times, then answers in words deltas.
type roundsModel struct{ rounds, words, n int }

func (m *roundsModel) Stream(ctx context.Context, _ Request) (Stream, error) {
	m.n++
	u := &Usage{PromptTokens: 10, CompletionTokens: 5}
	if m.n%(m.rounds+1) != 0 {
		return &sliceStream{ctx: ctx, deltas: []Delta{
			{Seq: 1, Kind: DeltaToolCall, ToolCall: &ToolCallDelta{ID: fmt.Sprint("c", m.n), Name: "add", Arguments: `{"a":2,"b":3}`}},
			{Seq: 2, Kind: DeltaUsage, Usage: u}, {Seq: 3, Kind: DeltaFinish, StopReason: "tool_use"}}}, nil
	}
	var ds []Delta
	for i := range m.words {
		ds = append(ds, Delta{Seq: i + 1, Kind: DeltaText, Text: fmt.Sprint(i, " ")})
	}
	ds = append(ds, Delta{Seq: m.words + 1, Kind: DeltaUsage, Usage: u}, Delta{Seq: m.words + 2, Kind: DeltaFinish, StopReason: "end_turn"})
	return &sliceStream{ctx: ctx, deltas: ds}, nil
}

// Events a consumer keeps stay as they were delivered while later runs of the same agent
// (and later steps of the same run) emit theirs: a payload is never written twice. The
// long run uses up its event block's payloads and goes on in chunks (40 deltas, four
// tool rounds: more statuses, calls and results than the block holds).
func TestEventPayloadsKeptByAConsumerOutliveLaterRuns(t *testing.T) {
	for _, m := range []Model{newStepModel(), &roundsModel{rounds: 4, words: 40}} {
		a, err := New(Config{Name: "bench", SystemPrompt: "sys", Model: m, Tools: mustTools(addTool()), Store: NewMemoryStore()})
		if err != nil {
			t.Fatal(err)
		}
		keptEventsOutliveLaterRuns(t, a)
	}
}

func keptEventsOutliveLaterRuns(t *testing.T, a *Agent) {
	var kept []Event
	if _, err := a.RunWith(context.Background(), RunInput{Messages: []Message{UserMessage("2+3?")}}, func(e Event) { kept = append(kept, e) }); err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(kept)
	for range 30 {
		if _, err := a.RunWith(context.Background(), RunInput{Messages: []Message{UserMessage("2+3?")}}, func(Event) {}); err != nil {
			t.Fatal(err)
		}
	}
	after, _ := json.Marshal(kept)
	if !bytes.Equal(before, after) {
		t.Fatalf("kept events changed under later runs:\nbefore %s\nafter  %s", before, after)
	}
	seen := map[any]bool{}
	for _, e := range kept {
		checkPayload(t, e)
		if seen[e.Data] {
			t.Fatalf("event %d (%s) shares its payload with an earlier event", e.Seq, e.Type)
		}
		seen[e.Data] = true
	}
}

// oneStepRunAllocs is what a one-step run (a model call asking for one tool call, the
// tool, a second model call answering) allocates on discardStore, the benchmark model
// and tool included (BenchmarkStep): 39 when each event's payload was boxed into Data,
// 23 with the payloads and the first entries cut from the run's event block, 21 with
// each model call's input a slice of the transcript instead of a copy of it.
const oneStepRunAllocs = 21

// A one-step run's allocations are pinned: the count is deterministic, unlike its time,
// so a change that adds one to every run fails here rather than in a benchmark (and one
// that removes some updates the count).
func TestOneStepRunAllocationsArePinned(t *testing.T) {
	a, err := New(Config{Name: "bench", SystemPrompt: "sys", Model: newStepModel(), Tools: mustTools(addTool()), Store: discardStore{}})
	if err != nil {
		t.Fatal(err)
	}
	in := RunInput{Messages: []Message{UserMessage("2+3?")}}
	events := 0
	got := testing.AllocsPerRun(200, func() {
		res, err := a.RunWith(context.Background(), in, func(Event) { events++ })
		if err != nil || res.Final.Text() != "5" {
			t.Fatalf("run: %v %+v", err, res)
		}
	})
	if want := float64(oneStepRunAllocs + raceAllocs); got != want {
		t.Fatalf("a one-step run allocates %v times, want %v", got, want)
	}
	if events != 201*20 {
		t.Fatalf("%d events, want 20 a run", events)
	}
}
