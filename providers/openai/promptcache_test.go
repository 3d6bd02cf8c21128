package openai_test

import (
	"encoding/json"
	"io"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/providers"
)

// The request's prompt_cache sends its key as prompt_cache_key (and nothing without it);
// the cached prompt tokens OpenAI reports come back as the usage's cache_read.
func TestPromptCacheKeyIsSentAndCachedTokensCounted(t *testing.T) {
	r := newReplay(t)
	c := startAdapter(t, r)
	for _, key := range []string{"agenthost-0a1b2c", ""} {
		r.Use("cached_usage.http")
		req := hello()
		if key != "" {
			req.PromptCache = &providers.PromptCache{Enabled: true, Key: key}
		}
		evs, err := run(t, c, req)
		if err != io.EOF {
			t.Fatal(err)
		}
		var body struct {
			Key *string `json:"prompt_cache_key"`
		}
		if err := json.Unmarshal(r.Last().Body, &body); err != nil {
			t.Fatal(err)
		}
		if (key == "" && body.Key != nil) || (key != "" && (body.Key == nil || *body.Key != key)) {
			t.Fatalf("key %q: sent prompt_cache_key %v", key, body.Key)
		}
		if !slices.Contains(evs, "2 usage prompt=2006 completion=3 total=2009 cache_read=1920 cache_write=0") {
			t.Fatalf("events %q", evs)
		}
	}
}
