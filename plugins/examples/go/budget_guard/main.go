//go:build wasip1

// Command budget_guard is an example termination hook (kind "termination",
// exports on_step and before_final): after each step it stops the run when
// a budget from its config is spent — `max_cost_usd` (the run's cost),
// `max_turns` (iterations) or `max_tokens` (total tokens); a missing or 0
// budget is not checked. The stop carries a final text saying why.
// before_final always proceeds.
package main

import (
	"fmt"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/termination"
)

func main() {}

func init() {
	sdk.OnStep(func(in sdk.StepInput) (sdk.Decision, error) {
		maxCost, err := sdk.ConfigFloat("max_cost_usd", 0)
		if err != nil {
			return sdk.Decision{}, err
		}
		maxTurns, err := sdk.ConfigInt("max_turns", 0)
		if err != nil {
			return sdk.Decision{}, err
		}
		maxTokens, err := sdk.ConfigInt("max_tokens", 0)
		if err != nil {
			return sdk.Decision{}, err
		}
		switch {
		case maxCost > 0 && in.Usage.CostUSD >= maxCost:
			return stop("cost_budget", fmt.Sprintf("cost budget of $%.2f spent ($%.4f)", maxCost, in.Usage.CostUSD)), nil
		case maxTurns > 0 && in.Iteration >= maxTurns:
			return stop("turn_budget", fmt.Sprintf("turn budget of %d turns spent", maxTurns)), nil
		case maxTokens > 0 && in.Usage.TotalTokens >= maxTokens:
			return stop("token_budget", fmt.Sprintf("token budget of %d tokens spent (%d)", maxTokens, in.Usage.TotalTokens)), nil
		}
		return sdk.Decision{}, nil
	})
}

func stop(reason, why string) sdk.Decision {
	return sdk.Decision{Verdict: sdk.Stop, Reason: reason, Message: "Stopped before finishing: " + why + "."}
}
