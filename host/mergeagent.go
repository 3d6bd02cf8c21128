package host

import (
	"context"
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
	ask := func(ctx context.Context, agent, prompt, session string) (string, error) {
		in := loop.RunInput{SessionID: session, TraceID: traceID, User: info.User, Messages: []loop.Message{loop.UserMessage(prompt)}}
		return workflow.FinalText(mm.members[agent].RunWith(ctx, in, func(loop.Event) {}))
	}
	out, err := workflow.Merge(ctx, ask, mm.spec, prompt, info.SessionID+":merge")
	if err != nil {
		return nil, &loop.ModelError{Kind: loop.KindInvalidRequest, Message: "merge: " + err.Error()}
	}
	text, _ := out["answer"].(string)
	return &textStream{deltas: []loop.Delta{
		{Seq: 1, Kind: loop.DeltaText, Text: text},
		{Seq: 2, Kind: loop.DeltaFinish, StopReason: string(loop.StopEndTurn)},
	}}, nil
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
