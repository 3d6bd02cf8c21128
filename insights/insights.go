package insights

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// Report is what Compute finds. Counts are of runs that started at or after Since.
//
// A nested run (an ask_NAME's, a merge agent's asks, a plan step's sub-run: its
// run_started names a parent, or, stored before it did, its session is named as the
// host names sub-sessions; nested.go) spends from its parent's ledger, so its usage is
// already in its parent's run_finished. It is therefore not one of Runs, Outcomes, Cost,
// Tokens or Failures, which count top-level runs and their whole spend once; it is
// counted in Nested, per agent, and in the per-agent Plans and the per-tool Tools, which
// count what each agent and tool did wherever it ran.
type Report struct {
	Since    time.Time          `json:"since"`
	Runs     int                `json:"runs"`
	Outcomes []Outcome          `json:"outcomes"` // by status/reason, most first
	Tools    []Tool             `json:"tools"`    // by error rate, then calls
	Feedback []AgentFeedback    `json:"feedback"` // by agent
	Failures []Failure          `json:"failures"` // the commonest, most first
	Plans    []AgentPlans       `json:"plans"`    // plan-mode runs' revisions, by agent
	Cost     map[string]float64 `json:"cost_usd_by_status"`
	Tokens   Tokens             `json:"tokens"` // over the counted runs
	Nested   []NestedAgent      `json:"nested"` // nested runs by agent: spend already in the totals above
}

// NestedAgent sums one agent's nested runs: what it spent on its callers' behalf, which
// their runs' cost and tokens (and the report's totals) already include.
type NestedAgent struct {
	Agent   string  `json:"agent"`
	Runs    int     `json:"runs"`
	CostUSD float64 `json:"cost_usd"`
	Tokens  Tokens  `json:"tokens"`
}

// Tokens sums the counted runs' model tokens. CachedPrompt (the provider's prompt cache
// read them) and CacheWrite are part of Prompt.
type Tokens struct {
	Prompt       int `json:"prompt"`
	Completion   int `json:"completion"`
	CachedPrompt int `json:"cached_prompt"`
	CacheWrite   int `json:"cache_write"`
}

// Outcome counts the runs that ended one way, with their cost.
type Outcome struct {
	Status  loop.Status `json:"status"`
	Reason  loop.Reason `json:"reason"`
	Runs    int         `json:"runs"`
	CostUSD float64     `json:"cost_usd"`
}

// Tool sums one tool's calls.
type Tool struct {
	Name   string `json:"name"`
	Calls  int    `json:"calls"`  // the calls the tool ran
	Errors int    `json:"errors"` // of those, the ones it answered with an error or failed and a fallback stood in for
	// Refused are the calls a decision stopped before the tool ran: denied by the
	// permission hook or the approval default, or rejected by a human (or for want of
	// one). They are neither calls nor errors of the tool.
	Refused int `json:"refused"`
	// Cached are the calls answered from the tool-result cache: the tool did not run,
	// so they are not among Calls either.
	Cached    int     `json:"cached"`
	ErrorRate float64 `json:"error_rate"`
	MeanMS    float64 `json:"mean_ms"`
	MaxMS     int64   `json:"max_ms"`
}

// AgentFeedback sums the feedback on one agent's runs (the latest per person and run is
// not known: every feedback counts).
type AgentFeedback struct {
	Agent     string  `json:"agent"`
	Count     int     `json:"count"`
	MeanScore float64 `json:"mean_score"`
	Up        int     `json:"thumbs_up"`   // score 1
	Down      int     `json:"thumbs_down"` // score -1
}

// AgentPlans sums the plan revisions of one agent's plan-mode runs (mode = "plan"): a
// revision is a plan made after the run's first, when its evaluator asked to replan.
type AgentPlans struct {
	Agent         string  `json:"agent"`
	Runs          int     `json:"plan_runs"`      // runs that made a plan
	RevisedRuns   int     `json:"revised_runs"`   // of those, the runs that made more than one
	Revisions     int     `json:"revisions"`      // plans after the first, over all the runs
	MeanRevisions float64 `json:"mean_revisions"` // Revisions / Runs
}

// Failure is a failing outcome and the message its runs failed with.
type Failure struct {
	Status   loop.Status `json:"status"`
	Reason   loop.Reason `json:"reason"`
	Message  string      `json:"message"`
	Runs     int         `json:"runs"`
	Examples []RunRef    `json:"examples"` // up to three
}

// RunRef names a run.
type RunRef struct {
	Session string `json:"session"`
	Run     string `json:"run"`
}

// maxExamples bounds a failure's example runs.
const maxExamples = 3

// Compute reads every session of st and the feedback since since.
func Compute(ctx context.Context, st loop.SessionStore, since time.Time) (*Report, error) {
	lister, ok := st.(loop.SessionLister)
	if !ok {
		return nil, errors.New("insights: this store cannot list its sessions")
	}
	sessions, err := lister.Sessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("insights: %w", err)
	}
	a := newTally(since)
	known := make(map[string]bool, len(sessions))
	for _, s := range sessions {
		known[s.ID] = true
	}
	for _, s := range sessions {
		entries, err := st.Load(ctx, s.ID)
		if err != nil {
			return nil, fmt.Errorf("insights: %w", err)
		}
		a.session(s.ID, entries, subSession(s.ID, known))
	}
	if fs, ok := st.(loop.FeedbackStore); ok {
		fb, err := fs.Feedback(ctx, since)
		if err != nil {
			return nil, fmt.Errorf("insights: %w", err)
		}
		a.addFeedback(fb)
	}
	return a.report(), nil
}

// ParseWindow reads a report's window as people write it: a positive duration ("24h",
// "30m") or a whole number of days from 1 to 36500 ("7d").
func ParseWindow(v string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 && n <= 36500 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("%q: want a duration (24h) or a number of days from 1 to 36500 (7d)", v)
}
