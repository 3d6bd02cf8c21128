package a2abridge

import (
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/agenthost/agenthost/loop"
)

// streamer turns one run's events into the A2A events a client sees while the task works:
// each answer of the model (the text of one model call: a remark before a tool call, the
// final answer) is an artifact, named "answer", whose text arrives as the model writes
// it: the first fragment opens the artifact, each next one is appended (append: true),
// and when the answer is complete a last chunk (lastChunk: true, append: false) replaces
// the fragments with the whole text as the run stored it, so the task keeps one part per
// answer. A provider that does not stream gives the whole text in that last chunk alone.
// Events of nested runs (Event.Path: ask_NAME, plan steps) stay inside the tool call that
// made them, as they do in the session. It also collects the calls an approval waits for.
//
// It is used from the run's goroutine only.
type streamer struct {
	info  a2a.TaskInfoProvider
	run   string
	n     int  // answers completed so far: the current artifact is the (n+1)th
	open  bool // a fragment of the current answer was sent
	asked []loop.ToolCallData
}

func (s *streamer) artifactID() a2a.ArtifactID {
	return a2a.ArtifactID(fmt.Sprintf("%s-answer-%d", s.run, s.n+1))
}

func (s *streamer) translate(e loop.Event) []a2a.Event {
	if e.Path != "" {
		return nil
	}
	switch d := e.Data.(type) {
	case *loop.ToolCallData:
		if e.Type == loop.EventApproval {
			s.asked = append(s.asked, *d)
		}
	case *loop.ModelDeltaData:
		if d.Kind != loop.DeltaText || d.Text == "" {
			return nil
		}
		ev := s.chunk(d.Text)
		ev.Append = s.open
		s.open = true
		return []a2a.Event{ev}
	case *loop.AssistantMessageData:
		text := d.Message.Text()
		if text == "" && !s.open {
			return nil
		}
		ev := s.chunk(text)
		ev.LastChunk = true
		s.n, s.open = s.n+1, false
		return []a2a.Event{ev}
	}
	return nil
}

func (s *streamer) chunk(text string) *a2a.TaskArtifactUpdateEvent {
	ev := a2a.NewArtifactUpdateEvent(s.info, s.artifactID(), a2a.NewTextPart(text))
	ev.Append = false
	ev.Artifact.Name = "answer"
	return ev
}
