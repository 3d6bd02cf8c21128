//go:build wasip1

// Command todos is an example termination hook (kind "termination", exports
// on_step and before_final): it refuses a final answer while the
// conversation still holds an unchecked Markdown task ("- [ ] …") that no
// later message checked ("- [x] …"), sending the agent back to work with the
// list. After `max_continuations` (config, default 3) it lets the final pass.
package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/termination"
)

func main() {}

var taskLine = regexp.MustCompile(`(?m)^\s*[-*] \[([ xX])\] (.+?)\s*$`)

func init() {
	sdk.OnBeforeFinal(func(in sdk.FinalInput) (sdk.Decision, error) {
		maxContinuations, err := sdk.ConfigInt("max_continuations", 3)
		if err != nil {
			return sdk.Decision{}, err
		}
		if in.Continuations >= maxContinuations {
			return sdk.Decision{}, nil
		}
		texts := make([]string, 0, len(in.History)+1)
		for _, m := range in.History {
			texts = append(texts, m.Text())
		}
		open := unfinished(append(texts, in.Text))
		if len(open) == 0 {
			return sdk.Decision{}, nil
		}
		var b strings.Builder
		b.WriteString("You still have unfinished todos:\n")
		for _, t := range open {
			b.WriteString("- [ ] " + t + "\n")
		}
		b.WriteString("Finish them (and mark them - [x]) before you give your final answer.")
		return sdk.Decision{Verdict: sdk.Continue, Reason: fmt.Sprintf("%d unfinished todos", len(open)), Message: b.String()}, nil
	})
}

// unfinished returns the tasks whose last mention is unchecked, in the order
// they first appeared.
func unfinished(texts []string) []string {
	checked := map[string]bool{}
	var order []string
	for _, text := range texts {
		for _, m := range taskLine.FindAllStringSubmatch(text, -1) {
			task := m[2]
			if _, seen := checked[task]; !seen {
				order = append(order, task)
			}
			checked[task] = m[1] != " "
		}
	}
	var open []string
	for _, task := range order {
		if !checked[task] {
			open = append(open, task)
		}
	}
	return open
}
