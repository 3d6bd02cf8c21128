package insights

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// Plan revisions are counted per agent over its plan-mode runs (a run that made no
// plan is not one; an event a nested run delivered in its caller's stream
// (with a path) is not the caller's), with runs revised, the
// revisions in all and the mean per run; an agent whose plans are revised at least
// once a run on average, over enough runs, is suggested for review, one revised less
// often is not.
func TestPlanRevisionsAreAggregatedPerAgentAndOftenRevisedAgentsSuggested(t *testing.T) {
	st := loop.NewMemoryStore()
	ctx := context.Background()
	at := time.Now().Add(-time.Hour)
	run := func(agent, id string, revisions ...int) {
		es := []loop.Entry{ev(1, at, id, "", loop.RunStartedData{}, loop.EventRunStarted)}
		for _, r := range revisions {
			es = append(es, ev(int64(len(es)+1), at, id, "", loop.PlanData{Revision: r}, loop.EventPlan))
		}
		es = append(es, ev(int64(len(es)+1), at, id, "ask_x", loop.PlanData{Revision: 9}, loop.EventPlan)) // nested
		es = append(es, ev(int64(len(es)+1), at, id, "", loop.RunFinishedData{Status: loop.StatusCompleted, Reason: loop.ReasonEndTurn}, loop.EventRunFinished))
		for _, e := range es {
			e.Event.Agent = agent
		}
		if err := st.Append(ctx, "s_"+id, es...); err != nil {
			t.Fatal(err)
		}
	}
	run("planner", "p1", 1, 2, 3)
	run("planner", "p2", 1, 2)
	run("planner", "p3", 1)
	run("steady", "s1", 1)
	run("steady", "s2", 1, 2)
	run("steady", "s3", 1)
	run("react", "r1")
	r, err := Compute(ctx, st, at.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%+v", r.Plans); got != "[{Agent:planner Runs:3 RevisedRuns:2 Revisions:3 MeanRevisions:1} {Agent:steady Runs:3 RevisedRuns:1 Revisions:1 MeanRevisions:0.3333333333333333}]" {
		t.Fatalf("plans %s", got)
	}
	sug := Suggest(r)
	if len(sug) != 1 || sug[0].Kind != "plans" || sug[0].Target != "planner" ||
		sug[0].Evidence != "2 of its 3 plan runs were revised, 3 revisions in all (1.00 a run)" {
		t.Fatalf("suggestions %+v", sug)
	}
}

// A suggestion's id stays the same for its kind and target against the same manifest,
// whatever the evidence; against a changed manifest Find says the suggestion is stale
// (and gives its id now); an id no suggestion has, or one that is not an id, is
// unknown.
func TestSuggestionIDIsStableAndFindTellsStaleFromUnknown(t *testing.T) {
	a := []Suggestion{{Kind: "cap", Target: "[agent] max_iterations", Evidence: "2 runs"}, {Kind: "prompt", Target: "error"}}
	b := []Suggestion{{Kind: "prompt", Target: "error"}, {Kind: "cap", Target: "[agent] max_iterations", Evidence: "5 runs"}}
	Stamp(a, []byte("v1"))
	Stamp(b, []byte("v1"))
	if a[0].ID != b[1].ID || a[1].ID != b[0].ID || a[0].ID == a[1].ID || len(a[0].ID) != 17 {
		t.Fatalf("ids %q %q / %q %q", a[0].ID, a[1].ID, b[0].ID, b[1].ID)
	}
	if s, err := Find(b, a[0].ID, []byte("v1")); err != nil || s.Evidence != "5 runs" {
		t.Fatalf("find: %+v %v", s, err)
	}
	Stamp(b, []byte("v2"))
	if _, err := Find(b, a[0].ID, []byte("v2")); !errors.Is(err, ErrStaleSuggestion) || !strings.Contains(err.Error(), b[1].ID) {
		t.Fatalf("stale: %v", err)
	}
	for _, id := range []string{"deadbeef-00000000", "", "-", "\xff\xfe", strings.Repeat("a", 1<<16)} {
		if _, err := Find(b, id, []byte("v2")); !errors.Is(err, ErrUnknownSuggestion) {
			t.Fatalf("%.20q: %v", id, err)
		}
	}
}
