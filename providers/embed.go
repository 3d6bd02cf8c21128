package providers

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/agenthost/agenthost/providers/proto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// CapEmbeddings is the capability (Info) of an adapter that serves Embed.
const CapEmbeddings = "embeddings"

// Embedder is an optional Provider extension: an adapter that turns texts into vectors
// (long-term memory's similarity search). An adapter without it answers Embed with
// UNIMPLEMENTED, which the host reports as ErrNoEmbeddings.
type Embedder interface {
	// Embed returns one vector per input, in order, all of one length. A returned
	// *Error is the typed failure, as for Stream.
	Embed(ctx context.Context, model string, inputs []string) ([][]float32, *Usage, error)
}

// ErrNoEmbeddings is Embed on an adapter that has none.
var ErrNoEmbeddings = errors.New("the provider has no embeddings")

// Bounds on what an adapter may answer, so a broken or hostile one cannot make the host
// allocate without limit or store nonsense.
const (
	MaxEmbedInputs    = 256
	MaxEmbedDimension = 8192
)

func (s *grpcServer) Embed(ctx context.Context, req *providerpb.EmbedRequest) (*providerpb.EmbedResponse, error) {
	e, ok := s.impl.(Embedder)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "no embeddings")
	}
	vecs, usage, err := e.Embed(fromTraceMetadata(ctx), req.GetModel(), req.GetInputs())
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return &providerpb.EmbedResponse{Error: AsError(err).proto()}, nil
	}
	out := &providerpb.EmbedResponse{Usage: usage}
	for _, v := range vecs {
		out.Vectors = append(out.Vectors, &providerpb.Vector{Values: v})
	}
	return out, nil
}

// Embed asks the adapter for one vector per input. The answer is checked: one vector
// per input, all of one length (1 to MaxEmbedDimension), every value finite. The usage
// is what the adapter reported (nil when it reported none): the host charges it to the
// run the embedding is for (host/embed.go).
func (c *Client) Embed(ctx context.Context, model string, inputs []string) ([][]float32, *Usage, error) {
	if len(inputs) == 0 {
		return nil, nil, nil
	}
	if len(inputs) > MaxEmbedInputs {
		return nil, nil, fmt.Errorf("embed: %d inputs, more than %d", len(inputs), MaxEmbedInputs)
	}
	rpc, gen, err := c.conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	resp, err := rpc.Embed(ctx, &providerpb.EmbedRequest{Model: model, Inputs: inputs})
	if status.Code(err) == codes.Unimplemented {
		return nil, nil, ErrNoEmbeddings
	}
	if err != nil {
		return nil, nil, c.transportError(ctx, gen, "during Embed", err)
	}
	if resp.GetError() != nil {
		return nil, nil, errorFromProto(resp.GetError())
	}
	vs, err := checkVectors(resp.GetVectors(), len(inputs))
	if err != nil {
		return nil, nil, err
	}
	return vs, resp.GetUsage(), nil
}

func checkVectors(vs []*providerpb.Vector, n int) ([][]float32, error) {
	if len(vs) != n {
		return nil, fmt.Errorf("embed: the provider answered %d vectors for %d inputs", len(vs), n)
	}
	out := make([][]float32, n)
	for i, v := range vs {
		vals := v.GetValues()
		switch {
		case len(vals) == 0 || len(vals) > MaxEmbedDimension:
			return nil, fmt.Errorf("embed: vector %d has %d dimensions (want 1 to %d)", i, len(vals), MaxEmbedDimension)
		case len(vals) != len(vs[0].GetValues()):
			return nil, fmt.Errorf("embed: vector %d has %d dimensions, vector 0 has %d", i, len(vals), len(vs[0].GetValues()))
		}
		for _, f := range vals {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return nil, fmt.Errorf("embed: vector %d holds %v", i, f)
			}
		}
		out[i] = vals
	}
	return out, nil
}
