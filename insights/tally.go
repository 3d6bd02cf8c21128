package insights

import (
	"cmp"
	"slices"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// tally accumulates what the sessions' events say.
type tally struct {
	since    time.Time
	runs     int
	outcomes map[[2]string]*Outcome
	tools    map[string]*toolSum
	failures map[[3]string]*Failure
	feedback map[string]*AgentFeedback
	scores   map[string]int
	cost     map[string]float64
	tokens   Tokens
	plans    map[string]*AgentPlans
	nested   map[string]*NestedAgent
}

type toolSum struct {
	Tool
	totalMS int64
}

func newTally(since time.Time) *tally {
	return &tally{since: since, outcomes: map[[2]string]*Outcome{}, tools: map[string]*toolSum{},
		failures: map[[3]string]*Failure{}, feedback: map[string]*AgentFeedback{}, scores: map[string]int{}, cost: map[string]float64{},
		plans: map[string]*AgentPlans{}, nested: map[string]*NestedAgent{}}
}

// session adds one session's runs that started at or after since. sub says the session
// is named as a nested run's sub-session: its runs whose run_started names no parent
// (stored before it did) are taken for nested.
func (a *tally) session(id string, entries []loop.Entry, sub bool) {
	counted := map[string]bool{} // runs that started in the window
	nested := map[string]bool{}
	lastErr := map[string]string{}
	agent := map[string]string{}
	revision := map[string]int{} // the run's latest plan revision; 0: it made no plan
	for _, e := range entries {
		if e.Kind != loop.EntryEvent || e.Event == nil || e.Event.Path != "" { // nested runs count in their parent
			continue
		}
		ev := e.Event
		switch d := ev.Data.(type) {
		case *loop.RunStartedData:
			if !ev.Time.Before(a.since) {
				counted[ev.RunID] = true
			}
			agent[ev.RunID] = ev.Agent
			nested[ev.RunID] = d.Parent.Run != "" || sub
		case *loop.PlanData:
			revision[ev.RunID] = max(revision[ev.RunID], d.Revision)
		case *loop.ToolResultData:
			if counted[ev.RunID] {
				a.tool(*d)
			}
		case *loop.ErrorData:
			lastErr[ev.RunID] = d.Message
		case *loop.RunFinishedData:
			switch {
			case !counted[ev.RunID]:
				continue
			case nested[ev.RunID]: // its usage is in its parent's
				a.nestedRun(agent[ev.RunID], d.Usage)
			default:
				a.end(id, ev.RunID, *d, lastErr[ev.RunID])
			}
			a.plan(agent[ev.RunID], revision[ev.RunID])
		}
	}
}

func (a *tally) tool(d loop.ToolResultData) {
	t := a.tools[d.Name]
	if t == nil {
		t = &toolSum{Tool: Tool{Name: d.Name}}
		a.tools[d.Name] = t
	}
	if d.Refused != "" {
		t.Refused++
		return
	}
	if d.Cached {
		t.Cached++
		return
	}
	t.Calls++
	if d.IsError || d.Fallback != "" { // a fallback stood in: this tool failed

		t.Errors++
	}
	t.totalMS += d.DurationMS
	t.MaxMS = max(t.MaxMS, d.DurationMS)
}

func (a *tally) end(session, run string, d loop.RunFinishedData, lastErr string) {
	a.runs++
	k := [2]string{string(d.Status), string(d.Reason)}
	o := a.outcomes[k]
	if o == nil {
		o = &Outcome{Status: d.Status, Reason: d.Reason}
		a.outcomes[k] = o
	}
	o.Runs++
	o.CostUSD += d.Usage.CostUSD
	a.cost[string(d.Status)] += d.Usage.CostUSD
	a.tokens.add(d.Usage)
	if d.Status != loop.StatusFailed && d.Status != loop.StatusIncomplete {
		return
	}
	fk := [3]string{string(d.Status), string(d.Reason), lastErr}
	f := a.failures[fk]
	if f == nil {
		f = &Failure{Status: d.Status, Reason: d.Reason, Message: lastErr}
		a.failures[fk] = f
	}
	f.Runs++
	if len(f.Examples) < maxExamples {
		f.Examples = append(f.Examples, RunRef{Session: session, Run: run})
	}
}

// plan counts a finished run's plan revisions for its agent: a run that made no plan
// is not a plan run; revisions are the plans after the first.
func (a *tally) plan(agent string, revision int) {
	if revision == 0 {
		return
	}
	p := a.plans[agent]
	if p == nil {
		p = &AgentPlans{Agent: agent}
		a.plans[agent] = p
	}
	p.Runs++
	if revision > 1 {
		p.RevisedRuns++
		p.Revisions += revision - 1
	}
}

func (a *tally) addFeedback(fb []loop.Feedback) {
	for _, f := range fb {
		s := a.feedback[f.Agent]
		if s == nil {
			s = &AgentFeedback{Agent: f.Agent}
			a.feedback[f.Agent] = s
		}
		s.Count++
		a.scores[f.Agent] += f.Score
		switch f.Score {
		case 1:
			s.Up++
		case -1:
			s.Down++
		}
	}
}

func (a *tally) report() *Report {
	r := &Report{Since: a.since, Runs: a.runs, Cost: a.cost, Tokens: a.tokens, Outcomes: []Outcome{}, Tools: []Tool{}, Feedback: []AgentFeedback{}, Failures: []Failure{}, Plans: []AgentPlans{}}
	for _, o := range a.outcomes {
		r.Outcomes = append(r.Outcomes, *o)
	}
	slices.SortFunc(r.Outcomes, func(x, y Outcome) int {
		return cmp.Or(cmp.Compare(y.Runs, x.Runs), cmp.Compare(x.Status, y.Status), cmp.Compare(x.Reason, y.Reason))
	})
	for _, t := range a.tools {
		if t.Calls > 0 {
			t.ErrorRate = float64(t.Errors) / float64(t.Calls)
			t.MeanMS = float64(t.totalMS) / float64(t.Calls)
		}
		r.Tools = append(r.Tools, t.Tool)
	}
	slices.SortFunc(r.Tools, func(x, y Tool) int {
		return cmp.Or(cmp.Compare(y.ErrorRate, x.ErrorRate), cmp.Compare(y.Calls, x.Calls), cmp.Compare(x.Name, y.Name))
	})
	for agent, f := range a.feedback {
		f.MeanScore = float64(a.scores[agent]) / float64(f.Count)
		r.Feedback = append(r.Feedback, *f)
	}
	slices.SortFunc(r.Feedback, func(x, y AgentFeedback) int { return cmp.Compare(x.Agent, y.Agent) })
	for _, p := range a.plans {
		p.MeanRevisions = float64(p.Revisions) / float64(p.Runs)
		r.Plans = append(r.Plans, *p)
	}
	slices.SortFunc(r.Plans, func(x, y AgentPlans) int { return cmp.Compare(x.Agent, y.Agent) })
	r.Nested = []NestedAgent{}
	for _, n := range a.nested {
		r.Nested = append(r.Nested, *n)
	}
	slices.SortFunc(r.Nested, func(x, y NestedAgent) int { return cmp.Compare(x.Agent, y.Agent) })
	for _, f := range a.failures {
		r.Failures = append(r.Failures, *f)
	}
	slices.SortFunc(r.Failures, func(x, y Failure) int {
		return cmp.Or(cmp.Compare(y.Runs, x.Runs), cmp.Compare(x.Reason, y.Reason), cmp.Compare(x.Message, y.Message))
	})
	return r
}
