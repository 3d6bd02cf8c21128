package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/loop"
)

// Elicitation (elicitation/create): a server that asks the user for a form's fields
// during a tool call. The user is asked through the run's approval path: at once when
// its Approver can ask while the call waits (loop.AskInput: a terminal), else by an
// interrupt answered by a later run (loop/input.go, a served agent): the first time,
// the request is cancelled towards the server and the call ends with a
// loop.InputRequiredError carrying the form (the run stores input_required and ends
// interrupted, and an AG-UI client sees an interrupt with the message and schema); the
// resumed run calls the tool again, and when the server asks again the answer given
// with the resume (loop.AnswerFrom) is sent: accept with its fields (which the SDK
// checks against the requested schema), or decline. The server's tool runs twice.
// URL-mode elicitation (a page to open) is declined. Like sampling, a request outside
// a tool call is refused, and a server with elicitation has one call in flight at a time.

func (s *Server) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	s.curMu.Lock()
	ctx := s.cur
	s.curMu.Unlock()
	if ctx == nil {
		return nil, fmt.Errorf("mcp server %q: elicitation is served only during a tool call of this client", s.cfg.Name)
	}
	if req.Params.Mode == "url" || req.Params.URL != "" {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	if a, ok := loop.AnswerFrom(ctx); ok {
		return answer(a)
	}
	schema, _ := json.Marshal(req.Params.RequestedSchema)
	ir := loop.InputRequest{Message: req.Params.Message, Schema: schema}
	if a, ok, err := loop.AskInput(ctx, ir); err != nil {
		return nil, err
	} else if ok { // asked while the call waits (a terminal)
		return answer(a)
	}
	s.curMu.Lock()
	s.asked = &loop.InputRequest{Message: req.Params.Message, Schema: schema}
	s.curMu.Unlock()
	return &mcp.ElicitResult{Action: "cancel"}, nil
}

// answer is a person's answer as an elicitation result: accept with the fields, or decline.
func answer(a loop.Approval) (*mcp.ElicitResult, error) {
	if !a.Approved {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	content := map[string]any{}
	if len(a.Input) > 0 {
		if err := json.Unmarshal(a.Input, &content); err != nil {
			return nil, fmt.Errorf("the answer is not a JSON object: %w", err)
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// takeAsked returns (and forgets) what the call in flight asked of the user.
func (s *Server) takeAsked() *loop.InputRequest {
	s.curMu.Lock()
	defer s.curMu.Unlock()
	a := s.asked
	s.asked = nil
	return a
}
