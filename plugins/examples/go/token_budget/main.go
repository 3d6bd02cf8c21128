//go:build wasip1

// Command token_budget is an example context strategy (kind "context",
// export context_build): it drops the oldest messages after the system
// prompt until the estimated tokens (sdk.EstimateTokens) fit the budget;
// on overflow it aims at 3/4 of the budget. The last message is always kept.
// With budget 0 (no budget) the input is unchanged.
package main

import (
	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/contextbuild"
)

func main() {}

func init() {
	sdk.OnContextBuild(func(in sdk.ContextInput) (sdk.ContextOutput, error) {
		budget := in.Budget
		if budget <= 0 {
			return sdk.ContextOutput{}, nil
		}
		if in.Overflow {
			budget = budget * 3 / 4
		}
		system, rest := sdk.SplitSystem(in.Messages)
		total := sdk.EstimateTokensAll(in.Messages)
		if total <= budget {
			return sdk.ContextOutput{}, nil
		}
		for len(rest) > 1 && (total > budget || rest[0].Role == "tool") {
			total -= sdk.EstimateTokens(rest[0])
			rest = rest[1:]
		}
		return sdk.ContextOutput{Messages: append(append([]sdk.Message{}, system...), rest...)}, nil
	})
}
