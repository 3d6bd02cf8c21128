package telemetry

import (
	"context"
	"io"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agenthost/agenthost/loop"
)

// stepModel answers a tool call, then text, per run: one ReAct step.
type stepModel struct{}

func (stepModel) Stream(ctx context.Context, req loop.Request) (loop.Stream, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == loop.RoleTool {
		return &sliceStream{ds: []loop.Delta{{Seq: 1, Kind: loop.DeltaText, Text: "done"},
			{Seq: 2, Kind: loop.DeltaUsage, Usage: &loop.Usage{PromptTokens: 20, CompletionTokens: 2}},
			{Seq: 3, Kind: loop.DeltaFinish, StopReason: "end_turn"}}}, nil
	}
	return &sliceStream{ds: []loop.Delta{{Seq: 1, Kind: loop.DeltaToolCall, ToolCall: &loop.ToolCallDelta{ID: "c1", Name: "echo", Arguments: `{"x":1}`}},
		{Seq: 2, Kind: loop.DeltaUsage, Usage: &loop.Usage{PromptTokens: 10, CompletionTokens: 5}},
		{Seq: 3, Kind: loop.DeltaFinish, StopReason: "tool_use"}}}, nil
}

type sliceStream struct{ ds []loop.Delta }

func (s *sliceStream) Recv() (loop.Delta, error) {
	if len(s.ds) == 0 {
		return loop.Delta{}, io.EOF
	}
	d := s.ds[0]
	s.ds = s.ds[1:]
	return d, nil
}
func (s *sliceStream) Close() error { return nil }

// tracedTool is how the host's plugin tools call ToolSpan.
type tracedTool struct{ loop.Tool }

func (t tracedTool) Call(ctx context.Context, c loop.ToolCall) (res loop.ToolResult, err error) {
	ctx, end := ToolSpan(ctx, c.Name, "bench", c.Arguments)
	defer func() { end(res, err) }()
	return t.Tool.Call(ctx, c)
}

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkStepTelemetry is one ReAct step (a tool call, then the answer) through the
// loop: off is how a host without telemetry runs (nothing wrapped: what it costs is by
// construction nothing); on traces it (spans batched to an exporter that drops them)
// and counts it. BENCHMARKS.md states the difference.
func BenchmarkStepTelemetry(b *testing.B) {
	echo := loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "echo"}, Fn: func(ctx context.Context, c loop.ToolCall) (loop.ToolResult, error) {
		return loop.TextResult(c.Arguments), nil
	}}
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			var tel *Telemetry
			var model loop.Model = stepModel{}
			var tool loop.Tool = echo
			if mode == "on" {
				var err error
				if tel, err = New(context.Background(), Options{Metrics: true}); err != nil {
					b.Fatal(err)
				}
				tel.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
				tel.tracer = tel.tp.Tracer("bench")
				defer tel.Shutdown(context.Background())
				model, tool = WrapModel(model, "bench", "m"), tracedTool{echo}
			}
			tools, _ := loop.NewToolSet(tool)
			a, err := loop.New(loop.Config{Model: model, Tools: tools})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				in := loop.RunInput{Messages: []loop.Message{loop.UserMessage("go")}}
				ctx, end := tel.StartRun(context.Background(), "bench", &in)
				res, err := a.RunWith(ctx, in, func(e loop.Event) { tel.Observe(ctx, e) })
				end(res)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
