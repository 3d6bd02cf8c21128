package insights

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// Suggest proposes, from stored runs and feedback, a fallback for a tool that fails
// often (not for one with too few calls to tell, nor for a healthy one), a cap to raise
// where runs stopped at a limit, a prompt addition for a failure that repeats, and a
// review of an agent rated poorly — each with its evidence and example runs, in that
// order; a store with nothing wrong gets none.
func TestSuggestProposesConcreteChangesEachWithItsEvidence(t *testing.T) {
	st := loop.NewMemoryStore()
	ctx := context.Background()
	at := time.Now().Add(-time.Hour)
	run := func(id string, tools []loop.ToolResultData, end loop.RunFinishedData, errMsg string) {
		es := []loop.Entry{ev(1, at, id, "", loop.RunStartedData{}, loop.EventRunStarted)}
		for _, d := range tools {
			es = append(es, ev(int64(len(es)+1), at, id, "", d, loop.EventToolResult))
		}
		if errMsg != "" {
			es = append(es, ev(int64(len(es)+1), at, id, "", loop.ErrorData{Kind: "tool", Message: errMsg}, loop.EventError))
		}
		es = append(es, ev(int64(len(es)+1), at, id, "", end, loop.EventRunFinished))
		if err := st.Append(ctx, "s_"+id, es...); err != nil {
			t.Fatal(err)
		}
	}
	done := loop.RunFinishedData{Status: loop.StatusCompleted, Reason: loop.ReasonEndTurn}
	for i := range 3 { // flaky: 3 of 6 calls fail; healthy never; rare fails twice in 2 calls
		run(fmt.Sprintf("ok%d", i), []loop.ToolResultData{{Name: "flaky"}, {Name: "flaky", IsError: true}, {Name: "healthy"}, {Name: "healthy"}}, done, "")
	}
	run("rare", []loop.ToolResultData{{Name: "rare", IsError: true}, {Name: "rare", IsError: true}}, done, "")
	for i := range 2 {
		run(fmt.Sprintf("cap%d", i), nil, loop.RunFinishedData{Status: loop.StatusIncomplete, Reason: loop.ReasonMaxIterations, Usage: loop.Usage{CostUSD: 0.25}}, "")
	}
	for i := range 3 {
		run(fmt.Sprintf("fail%d", i), nil, loop.RunFinishedData{Status: loop.StatusFailed, Reason: loop.ReasonError}, "quota exceeded")
	}
	for i, score := range []int{-1, -1, 1} {
		if err := st.AddFeedback(ctx, loop.Feedback{SessionID: "s_ok0", RunID: fmt.Sprintf("r%d", i), Agent: "helper", Score: score, Time: at}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Compute(ctx, st, at.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got := Suggest(r)
	var kinds []string
	for _, s := range got {
		kinds = append(kinds, s.Kind+":"+s.Target)
	}
	if strings.Join(kinds, " ") != "fallback:flaky cap:[agent] max_iterations prompt:error review:helper" {
		t.Fatalf("suggestions %q", kinds)
	}
	if !strings.Contains(got[0].Change, `[tools.flaky] fallback = ["OTHER_TOOL"]`) || !strings.HasPrefix(got[0].Evidence, "3 of its 6 calls failed (50%)") {
		t.Errorf("fallback %+v", got[0])
	}
	if got[1].Evidence != "2 runs ended incomplete/max_iterations, costing $0.5000" || len(got[1].Examples) != 2 {
		t.Errorf("cap %+v", got[1])
	}
	if !strings.Contains(got[2].Change, `"quota exceeded"`) || got[2].Evidence != "3 runs ended failed/error with it" || len(got[2].Examples) != 3 {
		t.Errorf("prompt %+v", got[2])
	}
	if got[3].Evidence != "3 feedback: 1 up, 2 down, mean score -0.33" {
		t.Errorf("review %+v", got[3])
	}

	healthy := loop.NewMemoryStore()
	if r, err := Compute(ctx, healthy, at); err != nil || len(Suggest(r)) != 0 {
		t.Fatalf("an empty store: %v %v", Suggest(r), err)
	}
}
