package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/loop"
)

// Merged outputs (docs/workflows.md, "Asking several agents"). A prompt step with agents
// = ["a", "b", ...] asks each of them the same prompt, one after the other, each in a
// session of its own (the step's session and ".NAME"), and merges their answers into
// the step's output, {"answer": TEXT, "answers": [{"agent", "text"}, ...]} (plus "votes"
// for a vote), as merge says:
//   - concat (the default): every answer under its agent's name, in the agents' order;
//   - vote: the answer most agents gave (compared without case, spacing or a final
//     full stop), the first such agent's words; a tie goes to the earliest agent;
//   - judge: the judge agent is asked the prompt with every answer under its agent's
//     name, in a session of its own (".judge"), and its answer is the step's.
// An agent whose run does not complete fails the step (its retry asks them again).

// merges are the values of Step.Merge.
var merges = []string{"", "concat", "vote", "judge"}

// checkMerge checks a step's agents, merge and judge keys.
func checkMerge(key string, s Step) error {
	switch {
	case len(s.Agents) == 0 && (s.Merge != "" || s.Judge != ""):
		return keyErr(key+".merge", "merge and judge are for a prompt step with agents = [...]")
	case len(s.Agents) == 0:
		return nil
	case s.Prompt == "":
		return keyErr(key+".agents", "only a prompt step asks agents")
	case s.Agent != "":
		return keyErr(key+".agents", "a step has agent (one) or agents (several), not both")
	case len(s.Agents) < 2:
		return keyErr(key+".agents", "agents asks several agents: name at least two (or use agent)")
	case !slices.Contains(merges, s.Merge):
		return keyErr(key+".merge", "merge %q: want concat, vote or judge", s.Merge)
	case (s.Merge == "judge") != (s.Judge != ""):
		return keyErr(key+".judge", `merge = "judge" and judge = "AGENT" go together`)
	}
	for i, a := range s.Agents {
		if a == "" || slices.Contains(s.Agents[:i], a) {
			return keyErr(key+".agents", "agent %q: each agent is named once", a)
		}
	}
	return nil
}

// mergeAgents adds the agents step i names in agents and judge to out (Agents).
func mergeAgents(out map[string]string, i int, s Step) {
	for j, a := range s.Agents {
		out[fmt.Sprintf("steps.%d.agents.%d", i, j)] = a
	}
	if s.Judge != "" {
		out[fmt.Sprintf("steps.%d.judge", i)] = s.Judge
	}
}

// answer is one agent's answer in a merged step's output.
type answer struct {
	Agent string `json:"agent"`
	Text  string `json:"text"`
}

// Asker asks agent prompt in session and returns its final text.
type Asker func(ctx context.Context, agent, prompt, session string) (string, error)

// MergeSpec says whom Merge asks and how it merges: By is concat (or ""), vote or
// judge; Judge is the judging agent for judge.
type MergeSpec struct {
	Agents    []string
	By, Judge string
}

// MergeKinds are the values of MergeSpec.By.
func MergeKinds() []string { return slices.Clone(merges) }

// Merge asks each of spec's agents prompt through ask, one after the other, each in a
// session of its own (session and ".NAME"; the judge's ".judge"), and merges their
// answers as the package comment says: {"answer", "answers"} (plus "votes" for a vote).
// A prompt step with agents and an agent with [agents.NAME] merge (the host) both
// merge here.
func Merge(ctx context.Context, ask Asker, spec MergeSpec, prompt, session string) (map[string]any, error) {
	answers := make([]answer, 0, len(spec.Agents))
	for _, a := range spec.Agents {
		text, err := ask(ctx, a, prompt, session+"."+a)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", a, err)
		}
		answers = append(answers, answer{Agent: a, Text: text})
	}
	out := map[string]any{"answers": answers}
	switch spec.By {
	case "vote":
		best, votes := vote(answers)
		out["answer"], out["votes"] = best, votes
	case "judge":
		text, err := ask(ctx, spec.Judge, judgePrompt(prompt, answers), session+".judge")
		if err != nil {
			return nil, fmt.Errorf("judge %s: %w", spec.Judge, err)
		}
		out["answer"] = text
	default:
		out["answer"] = attributed(answers)
	}
	return out, nil
}

// askAll asks each of the step's agents prompt and merges their answers.
func (s *sched) askAll(ctx context.Context, cs *cstep, prompt, session string) (any, error) {
	return Merge(ctx, s.ask, MergeSpec{Agents: cs.Agents, By: cs.Merge, Judge: cs.Judge}, prompt, session)
}

// ask runs agent on prompt in session and returns its final text.
func (s *sched) ask(ctx context.Context, agent, prompt, session string) (string, error) {
	return FinalText(s.e.Exec.RunPrompt(ctx, agent, prompt, session))
}

// FinalText is the final text of an agent's run, or why the run gave none: an agent
// whose run does not complete has no answer.
func FinalText(res loop.RunResult, err error) (string, error) {
	if err != nil {
		return "", err
	}
	if res.Status != loop.StatusCompleted {
		msg := fmt.Sprintf("the agent run ended %s/%s", res.Status, res.Reason)
		if res.Err != nil {
			msg += ": " + res.Err.Error()
		}
		return "", errors.New(msg)
	}
	if res.Final == nil {
		return "", nil
	}
	return res.Final.Text(), nil
}

// attributed is every answer under its agent's name.
func attributed(answers []answer) string {
	var b strings.Builder
	for i, a := range answers {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%s]\n%s", a.Agent, strings.TrimSpace(a.Text))
	}
	return b.String()
}

// vote is the answer most agents gave and how many gave it.
func vote(answers []answer) (string, int) {
	norm := func(s string) string {
		return strings.TrimSuffix(strings.Join(strings.Fields(strings.ToLower(s)), " "), ".")
	}
	count := map[string]int{}
	for _, a := range answers {
		count[norm(a.Text)]++
	}
	best, votes := "", 0
	for _, a := range answers { // in the agents' order: a tie goes to the earliest
		if n := count[norm(a.Text)]; n > votes {
			best, votes = strings.TrimSpace(a.Text), n
		}
	}
	return best, votes
}

// judgePrompt asks the judge for one answer from the agents'.
func judgePrompt(prompt string, answers []answer) string {
	return fmt.Sprintf("Several agents were asked:\n\n%s\n\nTheir answers:\n\n%s\n\nGive the best single answer to the question, merging the answers where they agree and choosing where they differ. Answer with that answer only.",
		prompt, attributed(answers))
}
