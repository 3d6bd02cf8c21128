package providers

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/providers/proto"
)

// pluginName is the single plugin an adapter process serves.
const pluginName = "provider"

// handshake keeps adapters from being run by hand (go-plugin prints a hint and
// exits when the cookie is missing) and versions the protocol.
var handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "AGENTHOST_PROVIDER_PLUGIN",
	MagicCookieValue: "6f1d3c0e-agenthost-provider-v1",
}

// grpcPlugin is the go-plugin glue: Impl is set on the adapter side only.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Provider
}

func (p *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	providerpb.RegisterProviderServer(s, &grpcServer{impl: p.Impl})
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return providerpb.NewProviderClient(c), nil
}

// grpcServer adapts a Provider to the generated gRPC service.
type grpcServer struct {
	providerpb.UnimplementedProviderServer
	impl Provider
}

func (s *grpcServer) Configure(ctx context.Context, req *providerpb.ConfigureRequest) (*providerpb.ConfigureResponse, error) {
	if err := s.impl.Configure(ctx, req.GetOptions()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &providerpb.ConfigureResponse{}, nil
}

func (s *grpcServer) Info(ctx context.Context, _ *providerpb.InfoRequest) (*providerpb.InfoResponse, error) {
	info, err := s.impl.Info(ctx)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return info, nil
}

// Stream numbers the events and turns a returned error into the final error
// event, so typed errors cross the process boundary as data, not as gRPC
// status codes.
func (s *grpcServer) Stream(req *providerpb.ChatRequest, srv grpc.ServerStreamingServer[providerpb.ChatEvent]) error {
	var seq int64
	send := func(ev *ChatEvent) error {
		seq++
		ev.Seq = seq
		return srv.Send(ev)
	}
	err := s.impl.Stream(fromTraceMetadata(srv.Context()), req, send)
	if err == nil {
		return nil
	}
	if srv.Context().Err() != nil {
		return status.FromContextError(srv.Context().Err()).Err()
	}
	return send(ErrorEvent(AsError(err)))
}
