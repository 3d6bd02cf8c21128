package loop

import (
	"context"
	"encoding/json"
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
}

type answerKey struct{}

// AnswerFrom returns the human's answer to the running call's input request, when the
// run was resumed with one (RunInput.Approvals under the call's id).
func AnswerFrom(ctx context.Context) (Approval, bool) {
	a, ok := ctx.Value(answerKey{}).(Approval)
	return a, ok
}
