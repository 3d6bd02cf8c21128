package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/agenthost/agenthost/providers/proto"
)

// The host's side of the Session RPC (provider.proto): model calls ride long-lived
// streams, one call at a time each, instead of a new Stream RPC per call. A call costs
// one message each way on an open stream; a new HTTP/2 stream per call was most of a
// call's cost between the two processes (providers/README.md, Benchmark).
//
// The client keeps a pool of idle streams per adapter process. A call takes one (or
// opens one when none is idle: concurrent calls each have their own) and gives it back
// only when the call ended cleanly, with its finish or error event and nothing after it.
// A call that is cancelled, times out, breaks, or sees an adapter break the protocol
// drops its stream (cancelling it ends the adapter's side of the call too): a later call
// never sees what an earlier one left behind. The streams belong to one process; a
// restart starts with an empty pool.

// maxIdleSessions bounds the idle streams kept per process; a stream freed past it is
// closed. Calls at once beyond it still work, each on a stream of its own.
const maxIdleSessions = 64

type sessionStream = grpc.BidiStreamingClient[providerpb.SessionRequest, providerpb.SessionEvent]

// session is one Session stream and the number of its last call.
type session struct {
	st     sessionStream
	cancel context.CancelFunc
	gen    uint64 // the process it runs on
	call   uint64
}

// probeSession reports whether the adapter serves Session: it opens one and closes its
// side at once, and an adapter that serves it ends the stream cleanly. UNIMPLEMENTED (an
// adapter made before Session, or in another language without it) or anything else means
// every call goes through Stream.
func probeSession(ctx context.Context, rpc providerpb.ProviderClient, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := rpc.Session(ctx)
	if err != nil || st.CloseSend() != nil {
		return false
	}
	_, err = st.Recv()
	return errors.Is(err, io.EOF)
}

// takeSession returns an idle stream of the current process, or opens a new one. It
// returns nil when the process does not serve Session.
func (c *Client) takeSession(rpc providerpb.ProviderClient, gen uint64) (*session, error) {
	c.mu.Lock()
	if !c.sessions || gen != c.gen {
		c.mu.Unlock()
		return nil, nil
	}
	if n := len(c.idle); n > 0 {
		s := c.idle[n-1]
		c.idle[n-1] = nil
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return s, nil
	}
	c.mu.Unlock()
	// The stream outlives the call that opens it: its context is its own.
	ctx, cancel := context.WithCancel(context.Background())
	st, err := rpc.Session(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return &session{st: st, cancel: cancel, gen: gen}, nil
}

// putSession gives back the stream of a call that ended cleanly.
func (c *Client) putSession(s *session) {
	c.mu.Lock()
	if c.closed || s.gen != c.gen || len(c.idle) >= maxIdleSessions {
		c.mu.Unlock()
		s.cancel()
		return
	}
	c.idle = append(c.idle, s)
	c.mu.Unlock()
}

// dropIdleSessions closes every idle stream; c.mu is held. On a restart and on Close.
func (c *Client) dropIdleSessions() {
	for i, s := range c.idle {
		s.cancel()
		c.idle[i] = nil
	}
	c.idle = c.idle[:0]
}

// startSessionCall sends req as the next call on sess. From here on the stream is the
// call's: the call's end without a clean finish (its context cancelled by the caller,
// the watchdog or Close) cancels the stream, unless released first.
func (s *eventStream) startSessionCall(sess *session, req *ChatRequest) error {
	sess.call++
	s.sess, s.call = sess, sess.call
	s.release = context.AfterFunc(s.ctx, sess.cancel)
	msg := &providerpb.SessionRequest{Call: sess.call, Request: req, TraceContext: traceContextOf(s.parent)}
	err := sess.st.Send(msg)
	if errors.Is(err, io.EOF) {
		// The stream was ended by the other side; its status says why.
		_, err = sess.st.Recv()
	}
	return err
}

// recvSession returns the next event of the call from the stream, checking that the
// adapter keeps the protocol: events for this call only, nothing after its end.
func (s *eventStream) recvSession() (*ChatEvent, error) {
	if len(s.batch) == 0 {
		msg, err := s.sess.st.Recv()
		if err != nil {
			return nil, err
		}
		if msg.GetCall() != s.call || len(msg.GetEvents()) == 0 {
			return nil, s.violation(fmt.Sprintf("a message for call %d with %d events during call %d", msg.GetCall(), len(msg.GetEvents()), s.call))
		}
		s.batch = msg.GetEvents()
	}
	ev := s.batch[0]
	s.batch[0] = nil
	s.batch = s.batch[1:]
	if ev == nil {
		return nil, s.violation("an empty event")
	}
	if (ev.GetFinish() != nil || ev.GetError() != nil) && len(s.batch) > 0 {
		return nil, s.violation(fmt.Sprintf("%d events after the end of call %d", len(s.batch), s.call))
	}
	return ev, nil
}

// violation is the error of a call whose adapter broke the Session protocol; the
// stream is dropped with the call (it is not released).
func (s *eventStream) violation(what string) error {
	return &Error{Kind: KindProvider, Retryable: true,
		Message: fmt.Sprintf("provider %q: the adapter broke the session protocol: %s; the stream is dropped", s.c.cfg.Name, what)}
}

// endSession gives the stream back after the call's last event (finish or error) when
// the call still owned it: the watchdog or a cancellation that came first dropped it.
func (s *eventStream) endSession() {
	if s.release() {
		s.c.putSession(s.sess)
	}
}

// traceContextOf is the W3C trace context of ctx for a SessionRequest, nil when the
// host traces nothing (Stream carries the same in gRPC metadata: tracectx.go).
func traceContextOf(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	if len(c) == 0 {
		return nil
	}
	return c
}
