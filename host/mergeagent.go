package host

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/workflow"
)

// An [agents.NAME] merge agent (manifest.MergeConfig; docs/loop.md, "Merged agents")
// answers with the merged answers of the agents it lists. It is an ordinary member of the
// team whose model is mergeModel: a run of it is a run like any other (stored, streamed,
// reached through the door), and its one model call asks each listed agent the run's
// last user message — each in a session of its own, SESSION:merge.AGENT, so every agent
// keeps its conversation across turns — and returns what workflow.Merge, the code a
// workflow's prompt step with agents uses, makes of their answers. The listed agents run
// like ask_NAME's: nested in the call, their events not in this run's stream.
//
// They draw from the merge run's budget (docs/loop.md, "Merged agents"): each runs under
// the call's context, so within the run's deadline, and its ledger is nested in the
// merge run's (loop.Ledger), so every model call of theirs — the judge's too — is
// admitted against the merge run's max_tokens and max_cost_usd (and its callers') and
// charged to its usage, run record and run_finished. An ask is not started once the
// budget is spent or the deadline passed, and an asked agent stopped by the budget stops
// the merge: the call fails with loop.ErrBudgetExceeded, which ends the run as the loop
// ends any run its budget stopped (incomplete/budget_exceeded, the fixed summary). The
// summary call a limit asks for (loop.IsSummaryCall) asks nobody: it answers nothing and
// the run keeps the loop's fixed summary.

type mergeModel struct {
	spec    workflow.MergeSpec
	members map[string]*loop.Agent // the team, set once teamOf has built it
}

func newMergeModel(mc *manifest.MergeConfig) *mergeModel {
	return &mergeModel{spec: workflow.MergeSpec{Agents: mc.Agents, By: mc.By, Judge: mc.Judge}}
}

func (mm *mergeModel) Stream(ctx context.Context, req loop.Request) (loop.Stream, error) {
	prompt := ""
	for i := len(req.Messages) - 1; i >= 0 && prompt == ""; i-- {
		if req.Messages[i].Role == loop.RoleUser {
			prompt = req.Messages[i].Text()
		}
	}
	info, _ := loop.CallInfoFrom(ctx)
	traceID := "" // the merge run's trace, as an ask_NAME's nested run carries its caller's
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		traceID = sc.TraceID().String()
	}
	if loop.IsSummaryCall(req) {
		return answerStream(""), nil
	}
	ledger := loop.LedgerFrom(ctx)
	ask := func(ctx context.Context, agent, prompt, session string) (string, error) {
		if err := ctx.Err(); err != nil { // past the deadline: not started
			return "", err
		}
		if ledger != nil && ledger.Exhausted() { // the budget is spent: not started
			return "", fmt.Errorf("not asked: %w", loop.ErrBudgetExceeded)
		}
		in := loop.RunInput{SessionID: session, TraceID: traceID, User: info.User, Messages: []loop.Message{loop.UserMessage(prompt)}}
		res, err := mm.members[agent].RunWith(ctx, in, func(loop.Event) {})
		if err == nil && res.Reason == loop.ReasonBudgetExceeded {
			return "", fmt.Errorf("its run ended %s/%s: %w", res.Status, res.Reason, loop.ErrBudgetExceeded)
		}
		return workflow.FinalText(res, err)
	}
	out, err := workflow.Merge(ctx, ask, mm.spec, prompt, info.SessionID+":merge")
	switch {
	case errors.Is(err, loop.ErrBudgetExceeded):
		return nil, fmt.Errorf("merge: %w", err)
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, &loop.ModelError{Kind: loop.KindInvalidRequest, Message: "merge: " + err.Error()}
	}
	text, _ := out["answer"].(string)
	return answerStream(text), nil
}

// answerStream is a model answer of text that ends the turn.
func answerStream(text string) *textStream {
	return &textStream{deltas: []loop.Delta{
		{Seq: 1, Kind: loop.DeltaText, Text: text},
		{Seq: 2, Kind: loop.DeltaFinish, StopReason: string(loop.StopEndTurn)},
	}}
}

// textStream yields its deltas, then io.EOF.
type textStream struct{ deltas []loop.Delta }

func (s *textStream) Recv() (loop.Delta, error) {
	if len(s.deltas) == 0 {
		return loop.Delta{}, io.EOF
	}
	d := s.deltas[0]
	s.deltas = s.deltas[1:]
	return d, nil
}

func (s *textStream) Close() error { return nil }
