package insights

import (
	"strings"

	"github.com/agenthost/agenthost/loop"
)

// nestedRun counts a finished nested run for its agent.
func (a *tally) nestedRun(agent string, u loop.Usage) {
	n := a.nested[agent]
	if n == nil {
		n = &NestedAgent{Agent: agent}
		a.nested[agent] = n
	}
	n.Runs++
	n.CostUSD += u.CostUSD
	n.Tokens.add(u)
}

func (t *Tokens) add(u loop.Usage) {
	t.Prompt += u.PromptTokens
	t.Completion += u.CompletionTokens
	t.CachedPrompt += u.CacheReadTokens
	t.CacheWrite += u.CacheWriteTokens
}

// subSessionMarks are what the host puts between a parent's session id and the rest of
// a nested run's session id: an ask_NAME's PARENT:ask:CALL, a merge agent's ask
// PARENT:merge.AGENT (its judge's PARENT:merge.judge), a plan step's sub-run
// PARENT:plan:REV:STEP.
var subSessionMarks = []string{":ask:", ":merge.", ":plan:"}

// subSession reports whether id is named as a nested run's sub-session of a session
// among known: what tells a nested run stored before run_started named its parent. A
// session of one's own named that way (its PARENT stored too) is taken for one.
func subSession(id string, known map[string]bool) bool {
	for _, mark := range subSessionMarks {
		for i := 0; ; {
			j := strings.Index(id[i:], mark)
			if j < 0 {
				break
			}
			if i += j; known[id[:i]] {
				return true
			}
			i++
		}
	}
	return false
}
