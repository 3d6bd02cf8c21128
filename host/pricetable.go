package host

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
)

// prices.toml is the table of known models' list prices (dated, with where the figures
// come from, in the file). It is data, not code: updating a price is editing it.
//
//go:embed prices.toml
var pricesTOML string

type priceTable struct {
	AsOf   string                            `toml:"as_of"`
	Models map[string]manifest.PricingConfig `toml:"models"`
}

var loadPrices = sync.OnceValue(func() priceTable {
	var t priceTable
	if _, err := toml.Decode(pricesTOML, &t); err != nil {
		panic(fmt.Sprintf("host: prices.toml: %v", err)) // embedded and tested: cannot happen
	}
	return t
})

// knownPricing is the table's prices for model: its own entry, else the longest entry
// that, followed by "-", starts it (a dated snapshot of that model); nil when none does.
func knownPricing(model string) *loop.Pricing {
	models := loadPrices().Models
	p, ok := models[model]
	if !ok {
		best := ""
		for name := range models {
			if len(name) > len(best) && strings.HasPrefix(model, name+"-") {
				best = name
			}
		}
		if best == "" {
			return nil
		}
		p = models[best]
	}
	pr := toPricing(p)
	return &pr
}

// toPricing is a manifest's prices as the loop takes them.
func toPricing(p manifest.PricingConfig) loop.Pricing {
	return loop.Pricing{PromptPerMTok: p.PromptPerMTok, CompletionPerMTok: p.CompletionPerMTok, CachedPromptPerMTok: p.CachedPromptPerMTok}
}

// linkPricing is what a provider's model calls cost when it reports no cost: the
// provider's [pricing], else none here when [agent.pricing] is set (the loop applies it),
// else the price table's for the model.
func linkPricing(pc manifest.ProviderConfig, agent manifest.PricingConfig, model string) *loop.Pricing {
	switch {
	case pc.Pricing != nil:
		pr := toPricing(*pc.Pricing)
		return &pr
	case agent != (manifest.PricingConfig{}):
		return nil
	}
	return knownPricing(model)
}
