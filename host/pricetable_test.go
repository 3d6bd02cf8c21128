package host

import (
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
)

// The embedded table decodes, is dated, and prices every entry's input.
func TestPriceTableIsDatedAndPricesEveryModel(t *testing.T) {
	pt := loadPrices()
	if pt.AsOf == "" || len(pt.Models) < 20 {
		t.Fatalf("as_of %q, %d models", pt.AsOf, len(pt.Models))
	}
	for name, p := range pt.Models {
		if p.PromptPerMTok <= 0 || p.CompletionPerMTok < 0 {
			t.Errorf("%s: %+v", name, p)
		}
	}
}

// A model is priced by its own entry, or a dated snapshot by the longest entry that
// starts it; an unknown model is not priced.
func TestKnownPricingMatchesSnapshotsByLongestName(t *testing.T) {
	for model, want := range map[string]*loop.Pricing{
		"gpt-4o":                     {PromptPerMTok: 2.5, CompletionPerMTok: 10},
		"gpt-4o-2024-08-06":          {PromptPerMTok: 2.5, CompletionPerMTok: 10},
		"gpt-4o-mini-2024-07-18":     {PromptPerMTok: 0.15, CompletionPerMTok: 0.6},
		"claude-sonnet-4-5-20250929": {PromptPerMTok: 3, CompletionPerMTok: 15},
		"o3-mini":                    {PromptPerMTok: 1.1, CompletionPerMTok: 4.4},
		"llama3.2":                   nil,
		"gpt-4oo":                    nil, // a prefix must end at a "-"
	} {
		got := knownPricing(model)
		if (got == nil) != (want == nil) || (got != nil && *got != *want) {
			t.Errorf("%s: got %+v, want %+v", model, got, want)
		}
	}
}

// The manifest overrides the table: a provider's [pricing] first, then [agent.pricing]
// (applied by the loop, so the link has none of its own).
func TestLinkPricingManifestOverridesTheTable(t *testing.T) {
	own := &manifest.PricingConfig{PromptPerMTok: 1, CompletionPerMTok: 2}
	if p := linkPricing(manifest.ProviderConfig{Pricing: own}, manifest.PricingConfig{}, "gpt-4o"); p == nil || *p != (loop.Pricing{PromptPerMTok: 1, CompletionPerMTok: 2}) {
		t.Fatalf("provider pricing: %+v", p)
	}
	if p := linkPricing(manifest.ProviderConfig{}, manifest.PricingConfig{PromptPerMTok: 9}, "gpt-4o"); p != nil {
		t.Fatalf("agent pricing set: the link still has %+v", p)
	}
	if p := linkPricing(manifest.ProviderConfig{}, manifest.PricingConfig{}, "gpt-4o"); p == nil || p.PromptPerMTok != 2.5 {
		t.Fatalf("table: %+v", p)
	}
}
