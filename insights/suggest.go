package insights

import (
	"fmt"
	"slices"

	"github.com/agenthost/agenthost/loop"
)

// Suggestion is a concrete change the stored runs argue for, with the evidence: learning
// that the user acts on (`agenthost insights suggest`). Suggest only proposes: nothing
// is applied, and each suggestion names the manifest key or the text to change.
type Suggestion struct {
	// ID names the suggestion for `insights apply` (Stamp): the same kind and target
	// against the same manifest text keep the same id.
	ID string `json:"id,omitempty"`
	// Kind is fallback (a tool that fails often: give it a fallback or a group, or take
	// it away), cap (runs stopped by a limit: raise it), prompt (runs fail the same way:
	// tell the agent how to avoid it), review (an agent its users rate poorly) or plans
	// (an agent whose plans its evaluator sends back often).
	Kind     string   `json:"kind"`
	Target   string   `json:"target"`   // the tool, the limit's key, the failure's reason or the agent
	Change   string   `json:"change"`   // what to change
	Evidence string   `json:"evidence"` // the counts it rests on
	Examples []RunRef `json:"examples,omitempty"`
	// Key is the manifest key a cap suggestion raises, as a dotted path
	// ("agent.max_iterations"), when one key is meant; "" when the limit is not one key.
	Key string `json:"key,omitempty"`
}

// The thresholds a suggestion needs: enough calls or runs that one bad day is not a
// pattern.
const (
	minToolCalls     = 5    // a tool's calls before its error rate counts
	maxToolErrorRate = 0.25 // a rate at or above it suggests a fallback
	minCapRuns       = 2    // runs stopped by one limit
	minFailureRuns   = 3    // runs failed with one message
	minFeedback      = 3    // feedback on one agent
	minPlanRuns      = 3    // one agent's plan-mode runs
	maxMeanRevisions = 1.0  // revisions per plan run at or above it suggest a review
)

// capKeys are the manifest keys of the limits a run may stop at, as people read them.
var capKeys = map[loop.Reason]string{
	loop.ReasonMaxIterations:  "[agent] max_iterations",
	loop.ReasonMaxToolRounds:  "[agent] max_tool_rounds",
	loop.ReasonMaxDuration:    "[agent] max_run_duration",
	loop.ReasonBudgetExceeded: "[agent] max_tokens or max_cost_usd",
	loop.ReasonToolCallLimit:  "[agent.tool_policy] max_calls_per_tool or max_calls_per_run",
	loop.ReasonMaxTokens:      "the provider's max_tokens option (answers were cut)",
	loop.ReasonMaxSteps:       "[agent.plan] max_steps",
	loop.ReasonMaxReplans:     "[agent.plan] max_replans",
	loop.ReasonMaxHandoffs:    "[agent] max_handoffs",
}

// capPaths are the dotted paths of the limits that are one key of the entry agent.
var capPaths = map[loop.Reason]string{
	loop.ReasonMaxIterations: "agent.max_iterations",
	loop.ReasonMaxToolRounds: "agent.max_tool_rounds",
	loop.ReasonMaxDuration:   "agent.max_run_duration",
	loop.ReasonMaxSteps:      "agent.plan.max_steps",
	loop.ReasonMaxReplans:    "agent.plan.max_replans",
	loop.ReasonMaxHandoffs:   "agent.max_handoffs",
}

// Suggest reads a report and proposes changes, in a fixed order: tools to fall back
// from (worst first), caps to raise (most runs first), prompt additions for repeated
// failures, agents to review for their feedback, then for their plans' revisions.
func Suggest(r *Report) []Suggestion {
	var out []Suggestion
	for _, t := range r.Tools { // worst error rate first
		if t.Calls >= minToolCalls && t.ErrorRate >= maxToolErrorRate {
			out = append(out, Suggestion{Kind: "fallback", Target: t.Name,
				Change:   fmt.Sprintf(`declare what stands in when it fails: [tools.%s] fallback = ["OTHER_TOOL"], or a [tool_groups.NAME] with an equivalent tool; or take %q out of the agent's tools`, t.Name, t.Name),
				Evidence: fmt.Sprintf("%d of its %d calls failed (%.0f%%) since %s", t.Errors, t.Calls, 100*t.ErrorRate, r.Since.Format("2006-01-02 15:04"))})
		}
	}
	for _, o := range r.Outcomes { // most runs first
		key, ok := capKeys[o.Reason]
		if !ok || o.Runs < minCapRuns {
			continue
		}
		out = append(out, Suggestion{Kind: "cap", Target: key, Change: fmt.Sprintf("raise %s: %d runs stopped at it", key, o.Runs),
			Evidence: fmt.Sprintf("%d runs ended %s/%s, costing $%.4f", o.Runs, o.Status, o.Reason, o.CostUSD), Examples: examplesOf(r, o.Status, o.Reason), Key: capPaths[o.Reason]})
	}
	for _, f := range r.Failures {
		if _, isCap := capKeys[f.Reason]; isCap || f.Runs < minFailureRuns || f.Message == "" {
			continue
		}
		out = append(out, Suggestion{Kind: "prompt", Target: string(f.Reason),
			Change:   fmt.Sprintf("add to the system prompt what the agent should do when it meets %q (or fix its cause)", f.Message),
			Evidence: fmt.Sprintf("%d runs ended %s/%s with it", f.Runs, f.Status, f.Reason), Examples: slices.Clone(f.Examples)})
	}
	for _, a := range r.Feedback {
		if a.Count >= minFeedback && (a.Down > a.Up || a.Up+a.Down == 0 && a.MeanScore < 2.5) {
			out = append(out, Suggestion{Kind: "review", Target: a.Agent,
				Change:   fmt.Sprintf("review agent %q's system prompt and tools: its users rate its runs poorly", a.Agent),
				Evidence: fmt.Sprintf("%d feedback: %d up, %d down, mean score %.2f", a.Count, a.Up, a.Down, a.MeanScore)})
		}
	}
	for _, p := range r.Plans {
		if p.Runs >= minPlanRuns && p.MeanRevisions >= maxMeanRevisions {
			out = append(out, Suggestion{Kind: "plans", Target: p.Agent,
				Change:   fmt.Sprintf("review agent %q's goal, tools and evaluator: its plans are revised often (a planner prompt or a tool it lacks)", p.Agent),
				Evidence: fmt.Sprintf("%d of its %d plan runs were revised, %d revisions in all (%.2f a run)", p.RevisedRuns, p.Runs, p.Revisions, p.MeanRevisions)})
		}
	}
	return out
}

// examplesOf are the example runs of the report's failures with that status and reason.
func examplesOf(r *Report, s loop.Status, reason loop.Reason) []RunRef {
	var out []RunRef
	for _, f := range r.Failures {
		if f.Status == s && f.Reason == reason {
			out = append(out, f.Examples...)
		}
	}
	if len(out) > maxExamples {
		out = out[:maxExamples]
	}
	return out
}
