package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

// Default per-call timeouts (ClientConfig.FirstTokenTimeout, IdleTimeout). They are
// generous: a reasoning model may think for a minute before its first token, but a
// call that says nothing for longer is treated as hung, not waited on forever.
const (
	DefaultFirstTokenTimeout = 120 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
)

// errCallTimeout is the cancellation cause of a call its watchdog ended.
type errCallTimeout struct{ msg string }

func (e *errCallTimeout) Error() string { return e.msg }

// Stream starts one model call. Invalid UTF-8 in the request is replaced with U+FFFD
// first (protobuf refuses it), so a prompt or tool output holding arbitrary bytes
// does not fail the call. The call rides an idle Session stream when the adapter
// serves Session (session.go), else a Stream RPC of its own.
func (c *Client) Stream(ctx context.Context, req *ChatRequest) (EventStream, error) {
	rpc, gen, err := c.conn(ctx)
	if err != nil {
		return nil, err
	}
	if !requestValidUTF8(req) {
		validUTF8(req)
	}
	callCtx, cancel := context.WithCancelCause(ctx)
	s := &eventStream{c: c, gen: gen, parent: ctx, ctx: callCtx, cancel: cancel, idle: c.cfg.idleTimeout()}
	if d := c.cfg.firstTokenTimeout(); d > 0 {
		s.first = d
		s.timer = time.AfterFunc(d, s.timedOut)
	}
	sess, err := c.takeSession(rpc, gen)
	switch {
	case err != nil:
	case sess != nil:
		err = s.startSessionCall(sess, req)
	default:
		s.st, err = rpc.Stream(withTraceMetadata(callCtx), req)
	}
	if err != nil {
		err = s.classify(err, "at the start of a call")
		s.stop()
		return nil, err
	}
	return s, nil
}

type eventStream struct {
	c      *Client
	gen    uint64
	parent context.Context // the caller's: its end is a cancellation, not a failure
	ctx    context.Context // the call's: also ended by the watchdog
	cancel context.CancelCauseFunc
	first  time.Duration                                    // first_token_timeout; 0 = none
	idle   time.Duration                                    // idle_timeout; 0 = none
	st     grpc.ServerStreamingClient[providerpb.ChatEvent] // a call of its own; nil on a session

	// A call on a Session stream (session.go): the stream, the call's number on it, the
	// events of the last message not yet returned, and what stops the call's end from
	// cancelling the stream (true when it stopped it: the stream is still the call's).
	sess    *session
	call    uint64
	batch   []*ChatEvent
	release func() bool

	// The watchdog: one timer per call, armed for the first event (when there is a
	// first-token timeout) and re-armed for the idle timeout after each event (when
	// there is one); started says which of the two it waits for when it fires, stopped
	// that the call is over and it must not be armed again.
	mu      sync.Mutex
	timer   *time.Timer
	started bool
	stopped bool

	finished bool
	err      error // sticky: once failed or finished, Recv keeps saying so
}

func (s *eventStream) Recv() (*ChatEvent, error) {
	if s.err != nil {
		return nil, s.err
	}
	var ev *ChatEvent
	var err error
	if s.sess != nil {
		ev, err = s.recvSession()
	} else {
		ev, err = s.st.Recv()
	}
	var pe *Error
	switch {
	case errors.Is(err, io.EOF) && s.finished:
		s.err = io.EOF
	case errors.Is(err, io.EOF):
		s.err = &Error{Kind: KindProvider, Message: fmt.Sprintf("provider %q: stream ended without a finish event", s.c.cfg.Name), Retryable: true}
	case errors.As(err, &pe): // the session protocol broken (session.go)
		s.err = err
	case err != nil:
		s.err = s.classify(err, "mid-stream")
	case ev.GetError() != nil:
		s.err = errorFromProto(ev.GetError())
		if s.sess != nil {
			s.endSession()
		}
	}
	// The error is classified above, before the call is cancelled: cancelling
	// first would turn every failure into "context canceled".
	if s.err != nil {
		s.stop()
		return nil, s.err
	}
	if ev.GetFinish() != nil {
		s.finished = true
		if s.sess != nil {
			// Nothing follows a finish on a session: the stream goes back to the pool
			// now, and the next Recv says io.EOF without reading.
			s.endSession()
			s.err = io.EOF
			s.stop()
		} else {
			s.stopTimer()
		}
	} else {
		s.resetTimer()
	}
	return ev, nil
}

func (s *eventStream) Close() { s.stop() }

func (s *eventStream) stop() {
	s.stopTimer()
	s.cancel(context.Canceled)
}

func (s *eventStream) stopTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// resetTimer re-arms the watchdog for the idle timeout after an event (or stops it
// when there is none). The timer is reused: a call's events cost no new timers. The
// two timeouts are independent: with the first-token one off, the idle one still
// starts at the first event.
func (s *eventStream) resetTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = true
	switch {
	case s.stopped:
	case s.idle <= 0 && s.timer != nil:
		s.timer.Stop()
		s.timer = nil
	case s.idle <= 0:
	case s.timer == nil: // no first-token timeout: the idle one starts with the first event
		s.timer = time.AfterFunc(s.idle, s.timedOut)
	default:
		s.timer.Reset(s.idle)
	}
}

// timedOut is the watchdog firing: it ends the call with the timeout it waited for.
func (s *eventStream) timedOut() {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	msg := fmt.Sprintf("provider %q: no event within first_token_timeout (%s)", s.c.cfg.Name, s.first)
	if started {
		msg = fmt.Sprintf("provider %q: no event for idle_timeout (%s) mid-stream", s.c.cfg.Name, s.idle)
	}
	s.cancel(&errCallTimeout{msg})
}

// classify turns a gRPC failure into the caller's cancellation, a timeout (retryable,
// the process is kept), a request the protocol cannot carry (not retryable: the same
// request would fail again; a too large one is a context overflow), or a transport failure of the process (retryable; the
// process is restarted for the next call).
func (s *eventStream) classify(err error, when string) error {
	if s.parent.Err() != nil {
		return s.parent.Err()
	}
	var te *errCallTimeout
	if errors.As(context.Cause(s.ctx), &te) {
		return &Error{Kind: KindProvider, Message: te.msg, Retryable: true}
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.ResourceExhausted && s.c.procAlive() {
		// A message over MaxMessageSize (grpcopts.go): the connection is fine, and the
		// same request would fail again; a shorter history would not.
		return &Error{Kind: KindContextOverflow, Message: fmt.Sprintf("provider %q: the request or its answer exceeds the %d MiB the adapter connection carries: %s",
			s.c.cfg.Name, maxMessageSize>>20, st.Message())}
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.Internal && s.c.procAlive() {
		// grpc-go reports a request it cannot encode (or a response it cannot
		// decode) as Internal while the connection is fine.
		return &Error{Kind: KindInvalidRequest, Message: fmt.Sprintf("provider %q: %s", s.c.cfg.Name, st.Message())}
	}
	return s.c.transportError(s.parent, s.gen, when, err)
}
