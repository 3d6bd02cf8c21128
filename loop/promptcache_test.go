package loop

import (
	"math"
	"testing"
)

// Prompt tokens read from the provider's prompt cache cost CachedPromptPerMTok; without
// it, what every prompt token costs.
func TestPricingCostsCachedPromptTokensAtTheirOwnPrice(t *testing.T) {
	u := Usage{PromptTokens: 3_000_000, CacheReadTokens: 2_000_000, CompletionTokens: 1_000_000}
	for _, tc := range []struct {
		p    Pricing
		want float64
	}{
		{Pricing{PromptPerMTok: 3, CompletionPerMTok: 15, CachedPromptPerMTok: 0.3}, 1*3 + 2*0.3 + 15},
		{Pricing{PromptPerMTok: 3, CompletionPerMTok: 15}, 3*3 + 15},
	} {
		if got := tc.p.Cost(u); math.Abs(got-tc.want) > 1e-9 {
			t.Fatalf("%+v: cost %v, want %v", tc.p, got, tc.want)
		}
	}
}

// With PromptCache every model call of a run carries one key per agent and session.
func TestPromptCacheKeysEveryModelCallByAgentAndSession(t *testing.T) {
	m := script(turn{calls: []ToolCall{call("c1", "calc", `{"expression":"1+1"}`)}}, turn{text: "done"})
	a := newAgent(t, Config{Name: "helper", Model: m, Tools: tools(t, calcTool()), PromptCache: true})
	runCollect(t, a, userIn("s1", "go"))
	reqs := m.reqs
	if len(reqs) != 2 || reqs[0].PromptCacheKey != "helper\x00s1" || reqs[1].PromptCacheKey != "helper\x00s1" {
		t.Fatalf("keys %q", []string{reqs[0].PromptCacheKey, reqs[1].PromptCacheKey})
	}
	m = script(turn{text: "done"})
	runCollect(t, newAgent(t, Config{Model: m}), userIn("s1", "go"))
	if m.reqs[0].PromptCacheKey != "" {
		t.Fatal("a key without PromptCache")
	}
}
