package fake

import (
	"context"
	"io"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// Args is what Model passes to the "add" tool; Answer is the tool's result and the
// model's final text.
const (
	Args   = `{"a":2,"b":3}`
	Answer = "5"
)

// Model is a ReAct model with no cost: when the last message is a tool result it answers
// with the final text, otherwise it asks for one "add" tool call. It decides from the
// request alone, so one Model serves any number of concurrent sessions. Each answer is a
// stream of three deltas (content, usage, finish), as a streaming provider sends them.
// Delay, when set, waits before the first delta, like a model's time to first token.
type Model struct {
	Delay time.Duration
}

func (m Model) Stream(ctx context.Context, req loop.Request) (loop.Stream, error) {
	final := len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == loop.RoleTool
	s := &stream{ctx: ctx, final: final}
	if m.Delay > 0 {
		t := time.NewTimer(m.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s, nil
}

// stream yields the three deltas of one answer, then io.EOF.
type stream struct {
	ctx   context.Context
	final bool
	i     int
}

func (s *stream) Recv() (loop.Delta, error) {
	if err := s.ctx.Err(); err != nil {
		return loop.Delta{}, err
	}
	s.i++
	switch s.i {
	case 1:
		if s.final {
			return loop.Delta{Seq: 1, Kind: loop.DeltaText, Text: Answer}, nil
		}
		return loop.Delta{Seq: 1, Kind: loop.DeltaToolCall,
			ToolCall: &loop.ToolCallDelta{ID: "c1", Name: "add", Arguments: Args}}, nil
	case 2:
		return loop.Delta{Seq: 2, Kind: loop.DeltaUsage, Usage: &loop.Usage{PromptTokens: 10, CompletionTokens: 5}}, nil
	case 3:
		stop := "tool_use"
		if s.final {
			stop = "end_turn"
		}
		return loop.Delta{Seq: 3, Kind: loop.DeltaFinish, StopReason: stop}, nil
	}
	return loop.Delta{}, io.EOF
}

func (s *stream) Close() error { return nil }
