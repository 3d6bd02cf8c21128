package a2abridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/agenthost/agenthost/loop"
)

// Each model answer is an artifact whose text arrives in fragments and ends in one last
// chunk with the whole text as stored; an answer that was not streamed comes whole in
// its last chunk; an answer with no text (tool calls only) is no artifact; a nested
// run's text stays in its tool call; approvals are collected.
func TestA2AStreamsAnswersAsArtifactDeltas(t *testing.T) {
	s := &streamer{info: a2a.TaskInfo{TaskID: "t", ContextID: "c"}, run: "r"}
	delta := func(text string) loop.Event {
		return loop.Event{Type: loop.EventModelDelta, Data: &loop.ModelDeltaData{Kind: loop.DeltaText, Text: text}}
	}
	answer := func(text string) loop.Event {
		return loop.Event{Type: loop.EventAssistantMessage, Data: &loop.AssistantMessageData{Message: loop.Message{Role: loop.RoleAssistant, Content: []loop.Part{loop.TextPart(text)}}}}
	}
	nested := delta("from a sub-agent")
	nested.Path = "main/helper"
	var got []string
	for _, e := range []loop.Event{
		delta("Let "), delta("me look."), answer("Let me look."),
		{Type: loop.EventModelDelta, Data: &loop.ModelDeltaData{Kind: loop.DeltaReasoning, Text: "hmm"}},
		{Type: loop.EventAssistantMessage, Data: &loop.AssistantMessageData{}},
		nested,
		{Type: loop.EventApproval, Data: &loop.ToolCallData{ID: "c1", Name: "calc"}},
		answer("Whole [redacted]."),
	} {
		for _, ev := range s.translate(e) {
			a := ev.(*a2a.TaskArtifactUpdateEvent)
			got = append(got, fmt.Sprintf("%s %s append=%v last=%v %q", a.Artifact.ID, a.Artifact.Name, a.Append, a.LastChunk, partsText(a.Artifact.Parts)))
		}
	}
	want := []string{
		`r-answer-1 answer append=false last=false "Let "`,
		`r-answer-1 answer append=true last=false "me look."`,
		`r-answer-1 answer append=false last=true "Let me look."`,
		`r-answer-2 answer append=false last=true "Whole [redacted]."`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("artifact events:\n%q\nwant\n%q", got, want)
	}
	if len(s.asked) != 1 || s.asked[0].ID != "c1" {
		t.Errorf("asked %+v", s.asked)
	}
}

// A consumer that stops reading (the SDK after a final event, or a failed write) cancels
// the run, and Execute returns without waiting for events nobody reads.
func TestA2AExecutorCancelsTheRunWhenNoOneReads(t *testing.T) {
	runEnded := make(chan error, 1)
	x := &Executor{Run: func(ctx context.Context, in loop.RunInput, emit func(loop.Event)) (loop.RunResult, error) {
		for ctx.Err() == nil {
			emit(loop.Event{Type: loop.EventModelDelta, Data: &loop.ModelDeltaData{Kind: loop.DeltaText, Text: "x"}})
		}
		runEnded <- ctx.Err()
		return loop.RunResult{Status: loop.StatusAborted}, ctx.Err()
	}}
	ec := &a2asrv.ExecutorContext{TaskID: "t", ContextID: "c", Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("go"))}
	var got []string
	for ev := range x.Execute(context.Background(), ec) {
		got = append(got, fmt.Sprintf("%T", ev))
		if len(got) == 4 {
			break
		}
	}
	if want := []string{"*a2a.Task", "*a2a.TaskStatusUpdateEvent", "*a2a.TaskArtifactUpdateEvent", "*a2a.TaskArtifactUpdateEvent"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if err := <-runEnded; !errors.Is(err, context.Canceled) {
		t.Fatalf("the run ended with %v", err)
	}
}

// A run that fails before it starts (refused by the server's checks) fails the task,
// saying why.
func TestA2AExecutorFailsTheTaskOfARefusedRun(t *testing.T) {
	x := &Executor{Run: func(context.Context, loop.RunInput, func(loop.Event)) (loop.RunResult, error) {
		return loop.RunResult{}, errors.New("409 the session has a run")
	}}
	ec := &a2asrv.ExecutorContext{TaskID: "t", ContextID: "c", Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("go"))}
	var last a2a.Event
	for ev, err := range x.Execute(context.Background(), ec) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	st, ok := last.(*a2a.TaskStatusUpdateEvent)
	if !ok || st.Status.State != a2a.TaskStateFailed || textOf(st.Status.Message) != "409 the session has a run" {
		t.Fatalf("last event %+v", last)
	}
}
