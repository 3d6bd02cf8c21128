package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/providers"
)

// Embed through the real adapter process: POST /v1/embeddings with the batch, vectors
// back in input order whatever order the server lists them in; the API's errors are
// typed as for chat; a server naming one index twice is a provider error; the tokens
// the API counted come back with the vectors.
func TestEmbedThroughTheAdapter(t *testing.T) {
	r := newReplay(t)
	c := startAdapter(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.Use("embeddings.http")
	got, usage, err := c.Embed(ctx, "text-embedding-3-small", []string{"first", "second"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0][0] != 1 || got[0][2] != -1 || got[1][1] != -0.25 {
		t.Fatalf("vectors %v", got)
	}
	// The API's usage reaches the host, which charges it to the run (host/embed.go).
	if usage.GetPromptTokens() != 4 || usage.GetTotalTokens() != 4 {
		t.Fatalf("usage %v", usage)
	}
	req := r.Last()
	var body struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if req.Path != "/v1/embeddings" || json.Unmarshal(req.Body, &body) != nil || body.Model != "text-embedding-3-small" || strings.Join(body.Input, ",") != "first,second" {
		t.Fatalf("request %s %s", req.Path, req.Body)
	}
	r.Use("rate_limit.http")
	var pe *providers.Error
	if _, _, err := c.Embed(ctx, "m", []string{"x"}); !errors.As(err, &pe) || pe.Kind != providers.KindRateLimit {
		t.Fatalf("429: %v", err)
	}
	r.Use("embeddings_dup.http")
	if _, _, err := c.Embed(ctx, "m", []string{"a", "b"}); !errors.As(err, &pe) || !strings.Contains(pe.Message, "out of place") {
		t.Fatalf("duplicate index: %v", err)
	}
	// The host's own check: a vector count that is not the input count is refused.
	r.Use("embeddings.http")
	if _, _, err := c.Embed(ctx, "m", []string{"only one"}); err == nil || !strings.Contains(err.Error(), "out of place") {
		t.Fatalf("two vectors for one input: %v", err)
	}
}
