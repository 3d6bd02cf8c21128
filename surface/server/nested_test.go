package server

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// A served team: the lead asks the expert, whose add needs approval. The nested run is
// a step of the lead's run (agent:test/expert), its approval an interrupt of the lead's
// run; the resume answers it by call id, the expert's run resumes and the lead finishes.
func TestNestedApprovalIsAnInterruptOfTheServedRun(t *testing.T) {
	st := loop.NewMemoryStore()
	tools, _ := loop.NewToolSet(addTool)
	lead, err := loop.New(loop.Config{Name: "test", Model: newTurnModel(
		turn{calls: []loop.ToolCall{{ID: "q1", Name: "ask_expert", Arguments: `{"question":"2+40?"}`}}},
		turn{text: "The expert says 42."}), Store: st, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	expert, err := loop.New(loop.Config{Name: "expert", AsTool: true, Tools: tools, Store: st, Approver: InterruptApprover{},
		ToolPolicy: loop.ToolPolicy{RequireApproval: []string{"add"}},
		Model:      newTurnModel(turn{calls: []loop.ToolCall{{ID: "c1", Name: "add", Arguments: `{"a":2,"b":40}`}}}, turn{text: "42"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loop.NewTeam(lead, expert); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Agent: lead, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Drain(ctx)
	}()
	e := &testEnv{srv: srv, ts: ts, store: st}

	got := brief(e.run(t, runBody("s1", "r1", "ask the expert")))
	joined := strings.Join(got, "\n")
	for _, want := range []string{"STEP_STARTED agent:test/expert", "STEP_FINISHED agent:test/expert",
		"RUN_FINISHED interrupt interrupted/approval_required interrupt:c1"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("no %q in the interrupted run:\n%s", want, joined)
		}
	}
	got = brief(e.run(t, resumeBody("s1", "r2", "c1", `{"approved":true}`)))
	if last := got[len(got)-1]; last != "RUN_FINISHED success completed/end_turn" {
		t.Fatalf("resumed run:\n%s", strings.Join(got, "\n"))
	}
	if !strings.Contains(strings.Join(got, "\n"), `TOOL_CALL_RESULT q1 "42"`) {
		t.Fatalf("the ask's result is not in the resumed run:\n%s", strings.Join(got, "\n"))
	}
}
