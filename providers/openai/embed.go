package openai

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/providers"
	sdk "github.com/openai/openai-go/v3"
)

var _ providers.Embedder = (*Provider)(nil)

// Embed calls POST /v1/embeddings with the inputs as one batch (providers.Embedder). The
// model is the request's, else the embed_model option.
func (p *Provider) Embed(ctx context.Context, model string, inputs []string) ([][]float32, *providers.Usage, error) {
	p.mu.Lock()
	client, def := p.client, p.embedModel
	p.mu.Unlock()
	if model == "" {
		model = def
	}
	if model == "" {
		return nil, nil, &providers.Error{Kind: providers.KindInvalidRequest, Message: "openai: no embedding model: set [memory.embeddings] model or the embed_model option"}
	}
	resp, err := client.Embeddings.New(ctx, sdk.EmbeddingNewParams{Model: sdk.EmbeddingModel(model),
		Input: sdk.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs}})
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, mapError(err)
	}
	out := make([][]float32, len(inputs))
	for _, d := range resp.Data {
		if d.Index < 0 || int(d.Index) >= len(out) || out[d.Index] != nil {
			return nil, nil, &providers.Error{Kind: providers.KindProvider, Message: fmt.Sprintf("openai: embedding index %d out of place", d.Index)}
		}
		v := make([]float32, len(d.Embedding))
		for i, f := range d.Embedding {
			v[i] = float32(f)
		}
		out[d.Index] = v
	}
	for i, v := range out {
		if v == nil {
			return nil, nil, &providers.Error{Kind: providers.KindProvider, Message: fmt.Sprintf("openai: no embedding for input %d", i)}
		}
	}
	return out, &providers.Usage{PromptTokens: resp.Usage.PromptTokens, TotalTokens: resp.Usage.TotalTokens}, nil
}
