package providers

import "google.golang.org/grpc"

// Flow control on the adapter's connection. gRPC sizes its windows by measuring the
// bandwidth-delay product, sending a PING with data it receives and resizing on the
// answer: on a local socket that is a round trip between the processes for every few
// events, which a model call's handful of small messages pays for and never needs.
// Fixed windows turn the measuring off; 1 MiB holds any answer in flight.
const flowWindow = 1 << 20

// MaxMessageSize bounds one message on the adapter's connection, in both directions and
// on both sides. gRPC's default of 4 MiB is not a limit of the host: a request carries
// the whole history the context strategy keeps, and a session whose tool results (1 MiB
// each by default, max_output raises it) add up past 4 MiB would fail every later call
// (and be retried, and restart the adapter) for good. 64 MiB is past every model's
// context window (about 16M tokens of text), so a request the connection cannot carry
// is one no model could take either: it fails as context_overflow, which makes the loop
// compact the history rather than resend it (stream.go), and the adapter is kept.
const MaxMessageSize = 64 << 20

// maxMessageSize is what this process uses; tests lower it to reach it cheaply.
var maxMessageSize = MaxMessageSize

func grpcDialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithInitialWindowSize(flowWindow),
		grpc.WithInitialConnWindowSize(flowWindow),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)),
	}
}

func grpcServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.InitialWindowSize(flowWindow),
		grpc.InitialConnWindowSize(flowWindow),
		grpc.MaxRecvMsgSize(maxMessageSize),
		grpc.MaxSendMsgSize(maxMessageSize),
	}
}
