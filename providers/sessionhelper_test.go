package providers_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/providers"
	providerpb "github.com/agenthost/agenthost/providers/proto"
	"github.com/agenthost/agenthost/providers/scripted"
)

// sessionHelperEnv turns the test binary into one of the adapters below, by its value:
//
//   - "stream-only": an adapter made without Session, as one written before it (or in
//     another language) is: go-plugin and the generated service only, Configure, Info
//     and Stream, here playing the scripted model. The host must fall back to Stream.
//   - "hostile": an adapter whose Session breaks the protocol as the request's model
//     says (hostileSession).
//   - "served": providers.Serve with a Provider that misbehaves as the model says
//     (misbehavingProvider): what Serve's own Session does about it.
const sessionHelperEnv = "AGENTHOST_PROVIDERS_TEST_SESSION"

func runSessionHelper(kind string) {
	if kind == "served" {
		providers.Serve(misbehavingProvider{}) // never returns
	}
	var register func(*grpc.Server)
	switch kind {
	case "stream-only":
		register = func(s *grpc.Server) { providerpb.RegisterProviderServer(s, &streamOnly{m: scripted.New(nil)}) }
	case "hostile":
		register = func(s *grpc.Server) { providerpb.RegisterProviderServer(s, &hostileSession{}) }
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%s\n", sessionHelperEnv, kind)
		os.Exit(1)
	}
	plugin.Serve(&plugin.ServeConfig{
		// The handshake an adapter in any language makes (providers/README.md).
		HandshakeConfig: plugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "AGENTHOST_PROVIDER_PLUGIN",
			MagicCookieValue: "6f1d3c0e-agenthost-provider-v1"},
		Plugins:    plugin.PluginSet{"provider": &rawPlugin{register: register}},
		GRPCServer: plugin.DefaultGRPCServer,
	})
	os.Exit(0)
}

type rawPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	register func(*grpc.Server)
}

func (p *rawPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	p.register(s)
	return nil
}

func (p *rawPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("adapter side only")
}

// streamOnly serves the scripted model without Session (Session answers UNIMPLEMENTED,
// as the generated UnimplementedProviderServer does).
type streamOnly struct {
	providerpb.UnimplementedProviderServer
	m *scripted.Model
}

func (s *streamOnly) Configure(ctx context.Context, req *providerpb.ConfigureRequest) (*providerpb.ConfigureResponse, error) {
	if err := s.m.Configure(ctx, req.GetOptions()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &providerpb.ConfigureResponse{}, nil
}

func (s *streamOnly) Info(ctx context.Context, _ *providerpb.InfoRequest) (*providerpb.InfoResponse, error) {
	return &providerpb.InfoResponse{Name: "stream-only"}, nil
}

func (s *streamOnly) Stream(req *providerpb.ChatRequest, srv grpc.ServerStreamingServer[providerpb.ChatEvent]) error {
	var seq int64
	err := s.m.Stream(providers.FromTraceMetadata(srv.Context()), req, func(ev *providers.ChatEvent) error {
		seq++
		ev.Seq = seq
		return srv.Send(ev)
	})
	if err != nil {
		ev := providers.ErrorEvent(providers.AsError(err))
		seq++
		ev.Seq = seq
		return srv.Send(ev)
	}
	return nil
}

// hostileSession answers each call on a Session as the request's model says:
//
//	"ok"          text "ok", finish
//	"stale"       finish, then (a message of its own) a text event for the call that ended
//	"other-call"  a text event naming another call
//	"batch"       one message holding the finish and then a text event
//	"empty"       a message with no event
//	"silent"      text "thinking", then nothing, until the host gives up on the call
type hostileSession struct {
	providerpb.UnimplementedProviderServer
}

func (hostileSession) Configure(context.Context, *providerpb.ConfigureRequest) (*providerpb.ConfigureResponse, error) {
	return &providerpb.ConfigureResponse{}, nil
}

func (hostileSession) Session(srv grpc.BidiStreamingServer[providerpb.SessionRequest, providerpb.SessionEvent]) error {
	text := func(seq int64, s string) *providerpb.ChatEvent {
		return &providerpb.ChatEvent{Seq: seq, Event: &providerpb.ChatEvent_Text{Text: s}}
	}
	finish := func(seq int64) *providerpb.ChatEvent {
		return &providerpb.ChatEvent{Seq: seq, Event: &providerpb.ChatEvent_Finish{Finish: &providerpb.Finish{StopReason: "end_turn"}}}
	}
	for {
		req, err := srv.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		call := req.GetCall()
		var msgs []*providerpb.SessionEvent
		switch req.GetRequest().GetModel() {
		case "ok":
			msgs = append(msgs, &providerpb.SessionEvent{Call: call, Events: []*providerpb.ChatEvent{text(1, "ok"), finish(2)}})
		case "stale":
			msgs = append(msgs, &providerpb.SessionEvent{Call: call, Events: []*providerpb.ChatEvent{finish(1)}},
				&providerpb.SessionEvent{Call: call, Events: []*providerpb.ChatEvent{text(2, "late")}})
		case "other-call":
			msgs = append(msgs, &providerpb.SessionEvent{Call: call + 7, Events: []*providerpb.ChatEvent{text(1, "astray")}})
		case "batch":
			msgs = append(msgs, &providerpb.SessionEvent{Call: call, Events: []*providerpb.ChatEvent{finish(1), text(2, "late")}})
		case "empty":
			msgs = append(msgs, &providerpb.SessionEvent{Call: call})
		case "silent":
			if err := srv.Send(&providerpb.SessionEvent{Call: call, Events: []*providerpb.ChatEvent{text(1, "thinking")}}); err != nil {
				return err
			}
			<-srv.Context().Done()
			return srv.Context().Err()
		}
		for _, m := range msgs {
			if err := srv.Send(m); err != nil {
				return err
			}
		}
	}
}

// misbehavingProvider is a Go adapter on Serve that, by the request's model:
//
//	"ok"            text "ok", finish
//	"no-finish"     text "partial", then returns nil without a finish
//	"after-finish"  finish, then another event: what send says is kept for "report"
//	"report"        text: what send said to "after-finish", finish
type misbehavingProvider struct{}

var (
	afterFinishMu  sync.Mutex
	afterFinishErr error
)

func (misbehavingProvider) Configure(context.Context, map[string]string) error { return nil }
func (misbehavingProvider) Info(context.Context) (*providers.Info, error) {
	return &providers.Info{Name: "misbehaving"}, nil
}
func (misbehavingProvider) Stream(_ context.Context, req *providers.ChatRequest, send func(*providers.ChatEvent) error) error {
	switch req.GetModel() {
	case "no-finish":
		return send(providers.TextEvent("partial"))
	case "after-finish":
		if err := send(providers.FinishEvent(providers.StopEndTurn)); err != nil {
			return err
		}
		err := send(providers.TextEvent("late"))
		afterFinishMu.Lock()
		afterFinishErr = err
		afterFinishMu.Unlock()
		return nil
	case "report":
		afterFinishMu.Lock()
		err := afterFinishErr
		afterFinishMu.Unlock()
		if err := send(providers.TextEvent(fmt.Sprintf("send after finish: %v", err))); err != nil {
			return err
		}
		return send(providers.FinishEvent(providers.StopEndTurn))
	}
	if err := send(providers.TextEvent("ok")); err != nil {
		return err
	}
	return send(providers.FinishEvent(providers.StopEndTurn))
}
