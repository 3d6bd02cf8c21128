//go:build wasip1

// Command strict_evaluator is an example evaluator (kind "evaluator", export
// evaluate): a failed step asks for a replan naming it, up to revision
// config.max_revision (default 3), after which the plan fails; when every step
// succeeded the plan is done, its answer the outcomes in order.
package main

import (
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/evaluator"
)

func main() {}

func init() {
	sdk.OnEvaluate(func(in sdk.EvalInput) (sdk.Evaluation, error) {
		maxRev, err := sdk.ConfigInt("max_revision", 3)
		if err != nil {
			return sdk.Evaluation{}, err
		}
		var failed, answers []string
		for _, o := range in.Outcomes {
			switch o.Status {
			case "error":
				failed = append(failed, fmt.Sprintf("step %s failed: %s", o.ID, o.Outcome))
			case "ok":
				answers = append(answers, o.Outcome)
			}
		}
		if len(failed) > 0 {
			reason := strings.Join(failed, "; ")
			if in.Revision >= maxRev {
				return sdk.Evaluation{Verdict: "fail", Reason: fmt.Sprintf("revision %d still fails: %s", in.Revision, reason)}, nil
			}
			return sdk.Evaluation{Verdict: "replan", Reason: reason}, nil
		}
		if len(in.Outcomes) < len(in.Plan.Steps) {
			return sdk.Evaluation{Verdict: "continue", Reason: "steps remain"}, nil
		}
		return sdk.Evaluation{Verdict: "done", Reason: "every step succeeded", Answer: strings.Join(answers, "; ")}, nil
	})
}
