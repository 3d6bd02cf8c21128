//go:build wasip1

// Command keyword_grader is an example grader (kind "evaluator", export grade) for
// `agenthost eval`: the score is the share of the words in the case's config
// "required" (comma-separated) found in the final answer, case-insensitively; the
// case passes when every one is, and no tool call failed to be made when config
// "tool" names one the run had to call.
package main

import (
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/grader"
)

func main() {}

func init() {
	sdk.OnGrade(func(in sdk.GradeInput) (sdk.Grade, error) {
		var want, missing []string
		for _, w := range strings.Split(in.Config["required"], ",") {
			if w = strings.TrimSpace(w); w != "" {
				want = append(want, w)
			}
		}
		if len(want) == 0 {
			return sdk.Grade{}, fmt.Errorf(`config "required" names no words`)
		}
		final := strings.ToLower(in.Final)
		for _, w := range want {
			if !strings.Contains(final, strings.ToLower(w)) {
				missing = append(missing, w)
			}
		}
		if tool := in.Config["tool"]; tool != "" {
			called := false
			for _, c := range in.Calls {
				called = called || c.Name == tool
			}
			if !called {
				return sdk.Grade{Pass: false, Score: 0, Reason: "the run did not call " + tool}, nil
			}
		}
		score := float64(len(want)-len(missing)) / float64(len(want))
		if len(missing) > 0 {
			return sdk.Grade{Pass: false, Score: score, Reason: "missing: " + strings.Join(missing, ", ")}, nil
		}
		return sdk.Grade{Pass: true, Score: score, Reason: "every required word is there"}, nil
	})
}
