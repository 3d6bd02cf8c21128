package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// turn is one scripted model answer.
type turn struct {
	text, reasoning string
	calls           []ToolCall
	usage           *Usage
	stop            string
	err             error         // Stream fails with it
	midErr          error         // the stream fails after its first delta
	deltas          []Delta       // sent as is instead of the fields above
	hang            bool          // the stream blocks until its context ends
	check           func(Request) // sees the request
	panics          bool
}

// scriptModel replays turns in order, one per model call, and records every request.
type scriptModel struct {
	mu    sync.Mutex
	turns []turn
	reqs  []Request
}

func script(turns ...turn) *scriptModel { return &scriptModel{turns: turns} }

func (m *scriptModel) Stream(ctx context.Context, req Request) (Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, req)
	if len(m.turns) == 0 {
		return nil, &ModelError{Kind: KindInvalidRequest, Message: "script: out of turns"}
	}
	t := m.turns[0]
	m.turns = m.turns[1:]
	if t.check != nil {
		t.check(req)
	}
	if t.panics {
		panic("model exploded")
	}
	if t.err != nil {
		return nil, t.err
	}
	ds := t.deltas
	if ds == nil {
		ds = t.toDeltas()
	}
	return &sliceStream{ctx: ctx, deltas: ds, midErr: t.midErr, hang: t.hang}, nil
}

func (m *scriptModel) requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
}

// toDeltas streams the turn the way providers do: text in two pieces, arguments split.
func (t turn) toDeltas() []Delta {
	var ds []Delta
	add := func(d Delta) { d.Seq = len(ds) + 1; ds = append(ds, d) }
	if t.reasoning != "" {
		add(Delta{Kind: DeltaReasoning, Text: t.reasoning})
	}
	if t.text != "" {
		h := len(t.text) / 2
		add(Delta{Kind: DeltaText, Text: t.text[:h]})
		add(Delta{Kind: DeltaText, Text: t.text[h:]})
	}
	for i, c := range t.calls {
		h := len(c.Arguments) / 2
		add(Delta{Kind: DeltaToolCall, ToolCall: &ToolCallDelta{Index: i, ID: c.ID, Name: c.Name, Arguments: c.Arguments[:h]}})
		add(Delta{Kind: DeltaToolCall, ToolCall: &ToolCallDelta{Index: i, Arguments: c.Arguments[h:]}})
	}
	u := Usage{PromptTokens: 10, CompletionTokens: 5}
	if t.usage != nil {
		u = *t.usage
	}
	add(Delta{Kind: DeltaUsage, Usage: &u})
	stop := t.stop
	if stop == "" {
		stop = "end_turn"
		if len(t.calls) > 0 {
			stop = "tool_use"
		}
	}
	add(Delta{Kind: DeltaFinish, StopReason: stop})
	return ds
}

type sliceStream struct {
	ctx    context.Context
	deltas []Delta
	i      int
	midErr error
	hang   bool
}

func (s *sliceStream) Recv() (Delta, error) {
	if s.hang {
		<-s.ctx.Done()
		return Delta{}, s.ctx.Err()
	}
	if err := s.ctx.Err(); err != nil {
		return Delta{}, err
	}
	if s.midErr != nil && s.i == 1 {
		return Delta{}, s.midErr
	}
	if s.i >= len(s.deltas) {
		return Delta{}, io.EOF
	}
	s.i++
	return s.deltas[s.i-1], nil
}
func (s *sliceStream) Close() error { return nil }

// calcTool evaluates arithmetic expressions with Go's constant arithmetic: exact, real.
func calcTool() Tool {
	return FuncTool{
		ToolSpec: ToolSpec{Name: "calc", Description: "Evaluate an arithmetic expression",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"],"additionalProperties":false}`)},
		Fn: func(_ context.Context, c ToolCall) (ToolResult, error) {
			var in struct{ Expression string }
			if err := json.Unmarshal([]byte(c.Arguments), &in); err != nil {
				return ToolResult{}, fmt.Errorf("calc: %w", err)
			}
			v, err := evalExpr(in.Expression)
			if err != nil {
				return ErrorResult("calc: " + err.Error()), nil
			}
			return TextResult(v), nil
		},
	}
}

func evalExpr(s string) (string, error) {
	e, err := parser.ParseExpr(s)
	if err != nil {
		return "", err
	}
	var eval func(ast.Expr) (constant.Value, error)
	eval = func(e ast.Expr) (constant.Value, error) {
		switch e := e.(type) {
		case *ast.BasicLit:
			return constant.MakeFromLiteral(e.Value, e.Kind, 0), nil
		case *ast.ParenExpr:
			return eval(e.X)
		case *ast.UnaryExpr:
			x, err := eval(e.X)
			if err != nil {
				return nil, err
			}
			return constant.UnaryOp(e.Op, x, 0), nil
		case *ast.BinaryExpr:
			x, err := eval(e.X)
			if err != nil {
				return nil, err
			}
			y, err := eval(e.Y)
			if err != nil {
				return nil, err
			}
			if e.Op == token.QUO && constant.Sign(y) == 0 {
				return nil, fmt.Errorf("division by zero")
			}
			return constant.BinaryOp(x, e.Op, y), nil
		}
		return nil, fmt.Errorf("unsupported expression %T", e)
	}
	v, err := eval(e)
	if err != nil {
		return "", err
	}
	return v.ExactString(), nil
}

// wordsTool counts words.
func wordsTool() Tool {
	return FuncTool{
		ToolSpec: ToolSpec{Name: "words", Description: "Count words",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		Fn: func(_ context.Context, c ToolCall) (ToolResult, error) {
			var in struct{ Text string }
			if err := json.Unmarshal([]byte(c.Arguments), &in); err != nil {
				return ToolResult{}, err
			}
			return TextResult(fmt.Sprint(len(strings.Fields(in.Text)))), nil
		},
	}
}

// echoTool returns its raw arguments, to see exactly what a tool received.
func echoTool() Tool {
	return FuncTool{ToolSpec: ToolSpec{Name: "echo"}, Fn: func(_ context.Context, c ToolCall) (ToolResult, error) {
		return TextResult("got: " + c.Arguments), nil
	}}
}

// doneTool ends the run.
func doneTool() Tool {
	return FuncTool{ToolSpec: ToolSpec{Name: "done"}, Fn: func(_ context.Context, c ToolCall) (ToolResult, error) {
		var in struct{ Answer string }
		_ = json.Unmarshal([]byte(c.Arguments), &in)
		return ToolResult{Content: []Part{TextPart("ok")}, Done: true, Final: in.Answer}, nil
	}}
}

// waitTool blocks until its context ends, then reports why.
func waitTool(started chan<- string) Tool {
	return FuncTool{ToolSpec: ToolSpec{Name: "wait"}, Fn: func(ctx context.Context, c ToolCall) (ToolResult, error) {
		if started != nil {
			started <- c.ID
		}
		<-ctx.Done()
		return ToolResult{}, ctx.Err()
	}}
}

func tools(t *testing.T, ts ...Tool) *ToolSet {
	t.Helper()
	set, err := NewToolSet(ts...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func call(id, name, args string) ToolCall { return ToolCall{ID: id, Name: name, Arguments: args} }

func newAgent(t *testing.T, cfg Config) *Agent {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "test"
	}
	if cfg.Retry.BaseDelay == 0 {
		cfg.Retry.BaseDelay = time.Millisecond
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// runCollect runs and returns the result and every event.
func runCollect(t *testing.T, a *Agent, in RunInput) (RunResult, []Event) {
	t.Helper()
	var evs []Event
	res, _ := a.RunWith(context.Background(), in, func(e Event) { evs = append(evs, e) })
	for _, e := range evs {
		checkPayload(t, e)
	}
	return res, evs
}

func userIn(session, text string) RunInput {
	return RunInput{SessionID: session, Messages: []Message{UserMessage(text)}}
}

// kinds renders events compactly, without deltas: "status:model_running", "tool_call:calc".
func kinds(evs []Event) []string {
	var out []string
	for _, e := range evs {
		switch d := e.Data.(type) {
		case *ModelDeltaData:
			continue
		case *StatusData:
			out = append(out, "status:"+string(d.State))
		case *StepStartData:
			out = append(out, "step_start:"+d.Name)
		case *ToolCallData:
			out = append(out, string(e.Type)+":"+d.Name)
		case *ToolResultData:
			s := "tool_result:" + d.Name
			if d.IsError {
				s += "!"
			}
			out = append(out, s)
		case *StepCompleteData:
			out = append(out, "step_complete:"+d.Status)
		case *ErrorData:
			out = append(out, "error:"+d.Kind)
		case *RunFinishedData:
			out = append(out, "run_finished:"+string(d.Status)+"/"+string(d.Reason))
		default:
			out = append(out, string(e.Type))
		}
	}
	return out
}

// history loads the session's messages as "role:text" (tool calls as name(args)).
func history(t *testing.T, a *Agent, session string) []string {
	t.Helper()
	entries, err := a.Store().Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Kind != EntryMessage {
			continue
		}
		m := e.Message
		s := string(m.Role) + ":" + m.Text()
		for _, c := range m.ToolCalls {
			s += fmt.Sprintf(" %s(%s)", c.Name, c.Arguments)
		}
		if m.ToolCallID != "" {
			s = string(m.Role) + "[" + m.ToolCallID + "]:" + m.Text()
		}
		out = append(out, s)
	}
	return out
}

func eventsOf[T any](evs []Event) []T {
	var out []T
	for _, e := range evs {
		if d, ok := e.Data.(*T); ok {
			out = append(out, *d)
		}
	}
	return out
}

func equal[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s:\n got  %v\n want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s differ at %d:\n got  %v\n want %v", what, i, got, want)
		}
	}
}

// after returns n kinds starting at the first one equal to start.
func after(t *testing.T, k []string, start string, n int) []string {
	t.Helper()
	for i, s := range k {
		if s == start {
			if i+n > len(k) {
				t.Fatalf("only %d events after %q: %q", len(k)-i, start, k[i:])
			}
			return k[i : i+n]
		}
	}
	t.Fatalf("no %q in %q", start, k)
	return nil
}

// testDriver replaces parts of GoDriver for a test: a fake clock, a recording sleep; its
// jitter is none, so delays are exact.
type testDriver struct {
	GoDriver
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

func (d testDriver) Now() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

func (d testDriver) Sleep(ctx context.Context, t time.Duration) error {
	if d.sleep != nil {
		return d.sleep(ctx, t)
	}
	return sleepCtx(ctx, t)
}

func (testDriver) Jitter(t time.Duration) time.Duration { return t }
