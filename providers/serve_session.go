package providers

import (
	"errors"
	"io"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/providers/proto"
)

// errCallEnded is what an adapter's send returns for an event after the call's finish or
// error event: nothing of a call may follow its end (provider.proto, Session).
var errCallEnded = errors.New("the call has already ended (finish or error sent)")

// Session serves model calls one after another on one stream (provider.proto): each
// request is run to its end, finish or error, before the next is read. Every Go adapter
// gets it through Serve, so the rules are kept here, once: events are numbered per call,
// a call the adapter ends without a finish gets a retryable error event, and an event
// sent after the end is refused to the adapter instead of reaching the host.
func (s *grpcServer) Session(srv grpc.BidiStreamingServer[providerpb.SessionRequest, providerpb.SessionEvent]) error {
	for {
		req, err := srv.Recv()
		if errors.Is(err, io.EOF) {
			return nil // the host closed its side: the stream ends with OK
		}
		if err != nil {
			return err
		}
		if err := s.sessionCall(srv, req); err != nil {
			return err
		}
	}
}

// sessionCall runs one call of a Session. A non-nil return ends the stream with that
// status: the host went away (the call was cancelled) or an event could not be sent.
func (s *grpcServer) sessionCall(srv grpc.BidiStreamingServer[providerpb.SessionRequest, providerpb.SessionEvent], req *providerpb.SessionRequest) error {
	ctx := srv.Context()
	if tc := req.GetTraceContext(); len(tc) > 0 {
		ctx = traceContext.Extract(ctx, propagation.MapCarrier(tc))
	}
	out := &providerpb.SessionEvent{Call: req.GetCall(), Events: make([]*ChatEvent, 1)}
	var seq int64
	ended := false
	send := func(ev *ChatEvent) error {
		if ended {
			return errCallEnded
		}
		seq++
		ev.Seq = seq
		out.Events[0] = ev // Send marshals before it returns: out is reused
		if err := srv.Send(out); err != nil {
			return err
		}
		ended = ev.GetFinish() != nil || ev.GetError() != nil
		return nil
	}
	err := s.impl.Stream(ctx, req.GetRequest(), send)
	if srv.Context().Err() != nil {
		return status.FromContextError(srv.Context().Err()).Err()
	}
	switch {
	case ended:
		return nil
	case err == nil:
		err = &Error{Kind: KindProvider, Message: "the adapter ended the call without a finish event", Retryable: true}
	}
	return send(ErrorEvent(AsError(err)))
}
