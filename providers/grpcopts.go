package providers

import "google.golang.org/grpc"

// Flow control on the adapter's connection. gRPC sizes its windows by measuring the
// bandwidth-delay product, sending a PING with data it receives and resizing on the
// answer: on a local socket that is a round trip between the processes for every few
// events, which a model call's handful of small messages pays for and never needs.
// Fixed windows turn the measuring off; 1 MiB holds any answer in flight.
const flowWindow = 1 << 20

var grpcDialOptions = []grpc.DialOption{
	grpc.WithInitialWindowSize(flowWindow),
	grpc.WithInitialConnWindowSize(flowWindow),
}

var grpcServerOptions = []grpc.ServerOption{
	grpc.InitialWindowSize(flowWindow),
	grpc.InitialConnWindowSize(flowWindow),
}
