package providers

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"github.com/agenthost/agenthost/providers/proto"
)

// EventStream yields the events of one model call.
type EventStream interface {
	// Recv returns the next event. After the finish event it returns io.EOF;
	// a failed call returns an *Error (or the context's error when the
	// caller cancelled). Error events are never returned as events.
	Recv() (*ChatEvent, error)
	// Close abandons the call; it is safe to call at any time, more than once.
	Close()
}

// Stream starts one model call.
func (c *Client) Stream(ctx context.Context, req *ChatRequest) (EventStream, error) {
	rpc, gen, err := c.conn(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	st, err := rpc.Stream(ctx, req)
	if err != nil {
		cancel()
		return nil, c.transportError(ctx, gen, "at the start of a call", err)
	}
	return &eventStream{c: c, gen: gen, ctx: ctx, cancel: cancel, st: st}, nil
}

type eventStream struct {
	c        *Client
	gen      int
	ctx      context.Context
	cancel   context.CancelFunc
	st       grpc.ServerStreamingClient[providerpb.ChatEvent]
	finished bool
	err      error // sticky: once failed or finished, Recv keeps saying so
}

func (s *eventStream) Recv() (*ChatEvent, error) {
	if s.err != nil {
		return nil, s.err
	}
	ev, err := s.st.Recv()
	switch {
	case errors.Is(err, io.EOF) && s.finished:
		s.err = io.EOF
	case errors.Is(err, io.EOF):
		s.err = &Error{Kind: KindProvider, Message: fmt.Sprintf("provider %q: stream ended without a finish event", s.c.cfg.Name), Retryable: true}
	case err != nil:
		s.err = s.c.transportError(s.ctx, s.gen, "mid-stream", err)
	case ev.GetError() != nil:
		s.err = errorFromProto(ev.GetError())
	}
	if s.err != nil {
		s.cancel()
		return nil, s.err
	}
	if ev.GetFinish() != nil {
		s.finished = true
	}
	return ev, nil
}

func (s *eventStream) Close() { s.cancel() }
