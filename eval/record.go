package eval

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/loop"
)

// Recording is what replaying one stored run needs: the case that reruns it (its
// input, and expectations taken from what it did), the model's answers in order, the
// tools' results and the system message the model was sent. It is read from the
// session's stored entries alone (Record); the caller writes it as a fixture.
type Recording struct {
	Case Case
	// System is the run's stored system message ("" when it had none).
	System string
	// Model is the model the run's run_started event names.
	Model string
	Turns []Turn
	Tools []ToolRecord
}

// Turn is one model answer of a recorded run, in the order it came.
type Turn struct {
	Text      string
	Reasoning string
	Calls     []loop.ToolCall
	Usage     *loop.Usage
	Stop      loop.StopReason
}

// ToolRecord is one tool call of a recorded run and the result it got.
type ToolRecord struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Content   string          `json:"content"`
	IsError   bool            `json:"is_error,omitempty"`
}

// Record reads the last finished run of a session's entries as a Recording whose case
// is named id. Earlier runs of the session become the case's input messages (their
// user and assistant text; their tool turns are not replayed). A session with no
// finished run, or whose run has no user message, is an error.
func Record(id string, entries []loop.Entry) (*Recording, error) {
	runID := lastRun(entries)
	if runID == "" {
		return nil, errors.New("the session has no finished run")
	}
	r := recorder{runID: runID, rec: &Recording{Case: Case{ID: id}}, calls: map[string]int{}}
	for _, e := range entries {
		if e.Kind == loop.EntryMessage && e.Message != nil {
			r.message(e)
		} else if e.Kind == loop.EntryEvent && e.Event != nil && e.Event.RunID == runID && e.Event.Path == "" {
			r.event(e.Event)
		}
	}
	rec := r.rec
	if r.prompt == nil {
		return nil, fmt.Errorf("run %s has no user message", runID)
	}
	if len(r.history) > 0 {
		rec.Case.Input.Messages = append(r.history, Message{Role: "user", Content: *r.prompt})
	} else {
		rec.Case.Input.Prompt = *r.prompt
	}
	rec.Case.Expect = expectOf(r.outcome, r.final, rec.Tools)
	return rec, nil
}

// lastRun is the id of the last top-level run of entries that finished, or "".
func lastRun(entries []loop.Entry) string {
	runID := ""
	for _, e := range entries {
		if e.Kind == loop.EntryEvent && e.Event != nil && e.Event.Type == loop.EventRunFinished && e.Event.Path == "" {
			runID = e.Event.RunID
		}
	}
	return runID
}

// recorder is Record's state while it reads a session's entries in order.
type recorder struct {
	runID   string
	rec     *Recording
	history []Message
	prompt  *string
	calls   map[string]int // tool call id → index in rec.Tools
	outcome *loop.RunFinishedData
	final   *loop.FinalData
}

// message takes a stored message: the system prompt, an earlier run's text as history,
// the recorded run's prompt and its model turns.
func (r *recorder) message(e loop.Entry) {
	m := e.Message
	switch {
	case m.Role == loop.RoleSystem && r.rec.System == "":
		r.rec.System = m.Text()
	case e.RunID != r.runID:
		if (m.Role == loop.RoleUser || m.Role == loop.RoleAssistant) && m.Text() != "" {
			r.history = append(r.history, Message{Role: string(m.Role), Content: m.Text()})
		}
	case m.Role == loop.RoleUser && r.prompt == nil:
		p := m.Text()
		r.prompt = &p
	case m.Role == loop.RoleAssistant:
		r.rec.Turns = append(r.rec.Turns, Turn{Text: m.Text(), Reasoning: m.Reasoning, Calls: m.ToolCalls})
	}
}

// event takes one of the recorded run's top-level events.
func (r *recorder) event(ev *loop.Event) {
	rec := r.rec
	switch d := ev.Data.(type) {
	case *loop.RunStartedData:
		rec.Model, rec.Case.Input.User = d.Model, d.User
	case *loop.AssistantMessageData:
		if n := len(rec.Turns); n > 0 {
			rec.Turns[n-1].Stop = d.StopReason
		}
	case *loop.Usage:
		if n := len(rec.Turns); n > 0 && rec.Turns[n-1].Usage == nil {
			u := *d
			rec.Turns[n-1].Usage = &u
		}
	case *loop.ToolCallData:
		r.calls[d.ID] = len(rec.Tools)
		rec.Tools = append(rec.Tools, ToolRecord{ID: d.ID, Name: d.Name, Arguments: d.Arguments})
	case *loop.ToolResultData:
		if i, ok := r.calls[d.ID]; ok {
			rec.Tools[i].Content, rec.Tools[i].IsError = d.Content, d.IsError
		}
	case *loop.FinalData:
		r.final = d
	case *loop.RunFinishedData:
		r.outcome = d
	}
}

// expectOf is what a replay of the run must do again: end the same way, make the same
// calls in the same order with the same arguments and results, and say the same.
func expectOf(done *loop.RunFinishedData, final *loop.FinalData, tools []ToolRecord) Expect {
	x := Expect{Status: string(done.Status)}
	if done.Status != loop.StatusCompleted {
		x.Reason = string(done.Reason)
	}
	if final != nil {
		if len(final.Output) > 0 && string(final.Output) != "null" {
			x.OutputEquals = final.Output
		} else if final.Text != "" {
			x.Equals = &final.Text
		}
	}
	if len(tools) == 0 {
		x.NoTools = true
	}
	for _, t := range tools {
		var args map[string]any
		if err := json.Unmarshal(t.Arguments, &args); err != nil || args == nil {
			args = map[string]any{}
		}
		content := t.Content
		x.Tools = append(x.Tools, ToolCall{Name: t.Name, Args: args, Result: &content})
	}
	x.ToolsInOrder = len(x.Tools) > 1
	return x
}
