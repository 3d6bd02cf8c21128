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
	runID := ""
	for _, e := range entries {
		if e.Kind == loop.EntryEvent && e.Event != nil && e.Event.Type == loop.EventRunFinished && e.Event.Path == "" {
			runID = e.Event.RunID
		}
	}
	if runID == "" {
		return nil, errors.New("the session has no finished run")
	}
	rec := &Recording{Case: Case{ID: id}}
	var history []Message
	var prompt *string
	calls := map[string]int{} // tool call id → index in rec.Tools
	var outcome *loop.RunFinishedData
	var final *loop.FinalData
	for _, e := range entries {
		if e.Kind == loop.EntryMessage && e.Message != nil {
			m := e.Message
			switch {
			case m.Role == loop.RoleSystem && rec.System == "":
				rec.System = m.Text()
			case e.RunID != runID:
				if (m.Role == loop.RoleUser || m.Role == loop.RoleAssistant) && m.Text() != "" {
					history = append(history, Message{Role: string(m.Role), Content: m.Text()})
				}
			case m.Role == loop.RoleUser && prompt == nil:
				p := m.Text()
				prompt = &p
			case m.Role == loop.RoleAssistant:
				rec.Turns = append(rec.Turns, Turn{Text: m.Text(), Reasoning: m.Reasoning, Calls: m.ToolCalls})
			}
			continue
		}
		if e.Kind != loop.EntryEvent || e.Event == nil || e.Event.RunID != runID || e.Event.Path != "" {
			continue
		}
		switch d := e.Event.Data.(type) {
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
			calls[d.ID] = len(rec.Tools)
			rec.Tools = append(rec.Tools, ToolRecord{ID: d.ID, Name: d.Name, Arguments: d.Arguments})
		case *loop.ToolResultData:
			if i, ok := calls[d.ID]; ok {
				rec.Tools[i].Content, rec.Tools[i].IsError = d.Content, d.IsError
			}
		case *loop.FinalData:
			final = d
		case *loop.RunFinishedData:
			outcome = d
		}
	}
	if prompt == nil {
		return nil, fmt.Errorf("run %s has no user message", runID)
	}
	if len(history) > 0 {
		rec.Case.Input.Messages = append(history, Message{Role: "user", Content: *prompt})
	} else {
		rec.Case.Input.Prompt = *prompt
	}
	rec.Case.Expect = expectOf(outcome, final, rec.Tools)
	return rec, nil
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
