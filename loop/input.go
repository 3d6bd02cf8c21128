package loop

import (
	"context"
	"encoding/json"
	"errors"
)

// A tool may need something from a human before it can finish (an MCP server's
// elicitation: a form to fill in). It cannot wait inside the call on a surface that
// answers with a later run (a served agent's interrupts), so it returns an
// *InputRequiredError: the call keeps no result, the run stores an input_required event
// and ends interrupted/approval_required like a call awaiting approval, and the run
// that resumes the session with the answer (RunInput.Approvals under the call's id,
// Approval.Input holding what the human gave) runs the call again; the tool finds the
// answer with AnswerFrom. The call runs twice, so what it did before asking happens
// again (at least once, like any call cut short).

// InputRequest is what a tool asks of a human: a message and the JSON Schema of the
// answer (an object of simple fields, as MCP elicitation has it).
type InputRequest struct {
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema,omitempty"`
	// Connect, when set, is the link (a path on the served host, or an absolute URL)
	// that signs the user in to what the call needs: a per-user MCP server. The
	// console offers it as a "Connect" button. Only the host sets it (a per-user
	// server's sign-in): an MCP server's elicitation or a plugin cannot.
	Connect string `json:"connect,omitempty"`
}

// InputRequiredError is returned by a tool that needs an answer first.
type InputRequiredError struct{ Request InputRequest }

func (e *InputRequiredError) Error() string { return "input required: " + e.Request.Message }

// Is makes an InputRequiredError an ErrApprovalPending: the call waits for a human.
func (e *InputRequiredError) Is(target error) bool { return target == ErrApprovalPending }

// EventInputRequired is stored when a call waits for a human's input.
const EventInputRequired EventType = "input_required"

// InputRequiredData is the input_required event's data: the call and what it asks.
type InputRequiredData struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema,omitempty"`
	Connect string          `json:"connect,omitempty"` // InputRequest.Connect
}

// InputAsker is an optional Approver extension: an Approver that can ask a person for a
// call's input while the call waits (a terminal). A tool that needs input asks it first
// (AskInput); ErrApprovalPending from it means no one can answer now, and the tool
// interrupts the run instead.
type InputAsker interface {
	AskInput(ctx context.Context, call ToolCall, req InputRequest) (Approval, error)
}

// AskInput asks the run's Approver for the running call's input, when it can ask while
// the call waits; ok is false when it cannot (the tool then returns an
// InputRequiredError).
func AskInput(ctx context.Context, req InputRequest) (a Approval, ok bool, err error) {
	ask, _ := ctx.Value(askerKey{}).(func(InputRequest) (Approval, error))
	if ask == nil {
		return Approval{}, false, nil
	}
	a, err = ask(req)
	if errors.Is(err, ErrApprovalPending) {
		return Approval{}, false, nil
	}
	return a, err == nil, err
}

type askerKey struct{}

type answerKey struct{}

// AnswerFrom returns the human's answer to the running call's input request, when the
// run was resumed with one (RunInput.Approvals under the call's id).
func AnswerFrom(ctx context.Context) (Approval, bool) {
	a, ok := ctx.Value(answerKey{}).(Approval)
	return a, ok
}
