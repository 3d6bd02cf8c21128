//go:build wasip1

// Command checklist is an example planner (kind "planner", export plan): each line
// (or ";"-separated part) of the goal is a step. A part that is arithmetic ("17*23",
// or "calc: 2+2") becomes a call of the calc tool when the agent has it; any other part
// is described work for the assistant. A replan keeps only the steps that did not
// succeed.
package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/planner"
)

func main() {}

var arithmetic = regexp.MustCompile(`^[0-9+\-*/(). ]+$`)

func init() {
	sdk.OnPlan(func(in sdk.PlanInput) (sdk.Plan, error) {
		if in.Previous != nil { // replan: what did not succeed, in the same order
			done := map[string]bool{}
			for _, o := range in.Outcomes {
				done[o.ID] = o.Status == "ok"
			}
			var steps []sdk.PlanStep
			for _, s := range in.Previous.Steps {
				if !done[s.ID] {
					s.ID = fmt.Sprintf("%s.r%d", s.ID, in.Revision)
					steps = append(steps, s)
				}
			}
			return sdk.Plan{Goal: in.Goal, Steps: steps}, nil
		}
		hasCalc := false
		for _, t := range in.Tools {
			hasCalc = hasCalc || t.Name == "calc"
		}
		var steps []sdk.PlanStep
		for _, part := range strings.FieldsFunc(in.Goal, func(r rune) bool { return r == '\n' || r == ';' }) {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			id := fmt.Sprint(len(steps) + 1)
			expr := strings.TrimSpace(strings.TrimPrefix(part, "calc:"))
			if hasCalc && arithmetic.MatchString(expr) {
				args, _ := json.Marshal(map[string]string{"expression": expr})
				steps = append(steps, sdk.PlanStep{ID: id, Description: "compute " + expr, Tool: "calc",
					Arguments: args, ExpectedOutcome: "the value of " + expr})
				continue
			}
			steps = append(steps, sdk.PlanStep{ID: id, Description: part, ExpectedOutcome: "done: " + part})
		}
		if len(steps) == 0 {
			return sdk.Plan{}, fmt.Errorf("the goal is empty")
		}
		return sdk.Plan{Goal: in.Goal, Steps: steps}, nil
	})
}
