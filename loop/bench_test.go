package loop

import (
	"context"
	"encoding/json"
	"strconv"
	"syscall"
	"testing"
)

// stepModel answers with one tool call, then with a final text, forever: a zero-latency
// model whose only cost is building its deltas.
type stepModel struct {
	call  []Delta
	final []Delta
	n     int
}

func newStepModel() *stepModel {
	u := &Usage{PromptTokens: 10, CompletionTokens: 5}
	return &stepModel{
		call: []Delta{
			{Seq: 1, Kind: DeltaToolCall, ToolCall: &ToolCallDelta{ID: "c1", Name: "add", Arguments: `{"a":2,"b":3}`}},
			{Seq: 2, Kind: DeltaUsage, Usage: u}, {Seq: 3, Kind: DeltaFinish, StopReason: "tool_use"}},
		final: []Delta{{Seq: 1, Kind: DeltaText, Text: "5"}, {Seq: 2, Kind: DeltaUsage, Usage: u},
			{Seq: 3, Kind: DeltaFinish, StopReason: "end_turn"}},
	}
}

func (m *stepModel) Stream(ctx context.Context, _ Request) (Stream, error) {
	m.n++
	ds := m.call
	if m.n%2 == 0 {
		ds = m.final
	}
	return &sliceStream{ctx: ctx, deltas: ds}, nil
}

func addTool() Tool {
	return FuncTool{ToolSpec: ToolSpec{Name: "add",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		Fn: func(_ context.Context, c ToolCall) (ToolResult, error) { return TextResult("5"), nil }}
}

// BenchmarkStep measures the loop's own overhead for one iteration with a tool: a run of
// one model call that asks for a tool, the tool call (schema-validated), and the model
// call that answers, with events emitted and everything stored in a MemoryStore. Model and
// tool cost nothing, so ns/op is the loop.
//
// The store keeps nothing (BenchmarkStepMemoryStore adds a real one): a new session per
// op would otherwise grow the heap for the whole benchmark and measure the GC instead.
func BenchmarkStep(b *testing.B) { benchStep(b, discardStore{}) }

// BenchmarkStepMemoryStore is BenchmarkStep with every entry kept in a MemoryStore.
func BenchmarkStepMemoryStore(b *testing.B) { benchStep(b, NewMemoryStore()) }

func benchStep(b *testing.B, store SessionStore) {
	a, err := New(Config{Name: "bench", SystemPrompt: "sys", Model: newStepModel(), Tools: mustTools(addTool()), Store: store})
	if err != nil {
		b.Fatal(err)
	}
	in := RunInput{Messages: []Message{UserMessage("2+3?")}}
	ctx := context.Background()
	events := 0
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		res, err := a.RunWith(ctx, in, func(Event) { events++ })
		if err != nil || res.Final.Text() != "5" {
			b.Fatalf("run: %v %+v", err, res)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

// processCPU is the CPU time this process has used (user + system, GC included), in ns.
// Unlike ns/op it does not grow when other processes compete for the cores.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func mustTools(ts ...Tool) *ToolSet {
	s, err := NewToolSet(ts...)
	if err != nil {
		panic(err)
	}
	return s
}

// discardStore accepts every write and remembers nothing.
type discardStore struct{}

func (discardStore) Append(context.Context, string, ...Entry) error    { return nil }
func (discardStore) Load(context.Context, string) ([]Entry, error)     { return nil, nil }
func (discardStore) SaveRun(context.Context, RunRecord) error          { return nil }
func (discardStore) Runs(context.Context, string) ([]RunRecord, error) { return nil, nil }
func (discardStore) KVGet(context.Context, string, string) ([]byte, bool, error) {
	return nil, false, nil
}
func (discardStore) KVSet(context.Context, string, string, []byte) error { return nil }

// BenchmarkModelInputScans is what a model call reads of its whole input besides
// handing it over, on a history of 200 one-step runs (801 messages): the attachments to
// load, a trimmed output to notice, the outputs to trim, the token estimate. Each reads
// the messages in place; ranging over them by value copied 128 bytes a message and a
// part (27 µs for the four at 801 messages, 9–12 µs in place).
func BenchmarkModelInputScans(b *testing.B) {
	ms := []Message{{Role: RoleSystem, Content: []Part{TextPart("sys")}}}
	for i := range 200 {
		id := "call-" + strconv.Itoa(i)
		ms = append(ms, UserMessage("2+3?"),
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "add", Arguments: `{"a":2,"b":3}`}}},
			Message{Role: RoleTool, ToolCallID: id, Content: []Part{TextPart("5")}},
			Message{Role: RoleAssistant, Content: []Part{TextPart("5")}})
	}
	r := &run{}
	b.ReportAllocs()
	for b.Loop() {
		if out, err := r.withAttachments(ms); err != nil || &out[0] != &ms[0] {
			b.Fatal(err)
		}
		if hasTrimmed(ms) || &trimToolOutputs(ms, 2000)[0] != &ms[0] || EstimateTokens(ms) == 0 {
			b.Fatal("changed")
		}
	}
}
