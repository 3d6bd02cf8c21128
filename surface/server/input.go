package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/loop"
)

// runInput maps an AG-UI RunAgentInput to the loop's RunInput.
//
// Text is valid UTF-8 from here on: encoding/json already replaces invalid bytes (and
// lone UTF-16 surrogates) in the body with U+FFFD when it decodes, and runInput does the
// same for input built in Go, so a prompt with a stray byte runs instead of failing at
// the provider (protobuf refuses invalid UTF-8 in strings).
//
// The session keeps the conversation (the loop stores every message), and AG-UI clients
// send the whole conversation with every run, so only the trailing user messages — the
// ones after the last message of any other role — are new input. A resume (answers to
// the interrupts of an interrupted run) usually has none.
func runInput(in RunAgentInput) (loop.RunInput, error) {
	if in.ThreadID == "" {
		return loop.RunInput{}, errors.New("threadId is required (it names the session)")
	}
	if in.RunID == "" {
		return loop.RunInput{}, errors.New("runId is required")
	}
	out := loop.RunInput{SessionID: validUTF8(in.ThreadID), RunID: validUTF8(in.RunID)}
	var err error
	if out.Messages, err = newMessages(in.Messages); err != nil {
		return loop.RunInput{}, err
	}
	if out.ClientTools, err = clientTools(in.Tools); err != nil {
		return loop.RunInput{}, err
	}
	if out.Approvals, err = approvals(in.Resume); err != nil {
		return loop.RunInput{}, err
	}
	if st := bytes.TrimSpace(in.State); len(st) > 0 && !bytes.Equal(st, []byte("null")) {
		out.State = st
	}
	for _, c := range in.Context {
		out.ClientContext = append(out.ClientContext, loop.ContextItem{Description: validUTF8(c.Description), Value: validUTF8(c.Value)})
	}
	if len(out.Messages) == 0 && len(out.Approvals) == 0 {
		return loop.RunInput{}, errors.New("nothing to run: no trailing user or tool message and no resume entries")
	}
	if err := applyControls(&out, in.ForwardedProps); err != nil {
		return loop.RunInput{}, fmt.Errorf("forwardedProps: %w", err)
	}
	return out, nil
}

// newMessages are the trailing user and tool messages: the run's new input.
func newMessages(msgs []inputMessage) ([]loop.Message, error) {
	var out []loop.Message
	start := len(msgs)
	for start > 0 && (msgs[start-1].Role == "user" || msgs[start-1].Role == "tool") {
		start--
	}
	for i, m := range msgs[start:] {
		parts, err := contentParts(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d] (id %q): %w", start+i, m.ID, err)
		}
		if m.Role == "tool" { // a client tool's result (L16)
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("messages[%d] (id %q): a tool message needs its toolCallId", start+i, m.ID)
			}
			out = append(out, loop.Message{Role: loop.RoleTool, ToolCallID: validUTF8(m.ToolCallID), Content: parts})
			continue
		}
		if len(parts) == 0 {
			return nil, fmt.Errorf("messages[%d] (id %q): user message has no content", start+i, m.ID)
		}
		out = append(out, loop.Message{Role: loop.RoleUser, Content: parts})
	}
	return out, nil
}

// clientTools are the tools the client runs itself (L16).
func clientTools(tools []clientTool) ([]loop.ToolSpec, error) {
	var out []loop.ToolSpec
	for i, t := range tools {
		if t.Name == "" {
			return nil, fmt.Errorf("tools[%d]: a tool needs a name", i)
		}
		schema := t.Parameters
		if len(schema) > 0 && !json.Valid(schema) {
			return nil, fmt.Errorf("tools[%d] (%s): parameters are not JSON", i, t.Name)
		}
		out = append(out, loop.ToolSpec{Name: validUTF8(t.Name), Description: validUTF8(t.Description), InputSchema: schema})
	}
	return out, nil
}

// approvals are the answers to an interrupted run's interrupts, by interrupt id; nil
// when there are none.
func approvals(resume []resumeEntry) (map[string]loop.Approval, error) {
	var out map[string]loop.Approval
	for i, r := range resume {
		if r.InterruptID == "" {
			return nil, fmt.Errorf("resume[%d]: interruptId is required", i)
		}
		a, err := approval(r)
		if err != nil {
			return nil, fmt.Errorf("resume[%d] (interrupt %q): %w", i, r.InterruptID, err)
		}
		if out == nil {
			out = map[string]loop.Approval{}
		}
		a.Reason = validUTF8(a.Reason)
		out[validUTF8(r.InterruptID)] = a
	}
	return out, nil
}

// maxHints bounds a run's runtime hints from a client.
const maxHints = 64

// applyControls reads the run's controls from forwardedProps; keys it does not know
// belong to the client and are left alone.
func applyControls(out *loop.RunInput, raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	var c runControls
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	if len(c.OutputSchema) > 0 && !bytes.Equal(c.OutputSchema, []byte("null")) {
		var obj map[string]any
		if json.Unmarshal(c.OutputSchema, &obj) != nil {
			return errors.New("outputSchema must be a JSON Schema object")
		}
		out.OutputSchema = c.OutputSchema
	}
	if c.Tools != nil {
		out.AllowedTools = make([]string, 0, len(*c.Tools))
		for _, t := range *c.Tools {
			out.AllowedTools = append(out.AllowedTools, validUTF8(t))
		}
	}
	if c.MaxIterations < 0 {
		return fmt.Errorf("maxIterations %d: want 0 or more", c.MaxIterations)
	}
	out.Limits.MaxIterations = c.MaxIterations
	out.ToolChoice, out.SystemPromptOverride = validUTF8(c.ToolChoice), validUTF8(c.System)
	out.Agent, out.User, out.ToolsOff = validUTF8(c.Agent), c.User, c.NoTools
	if len(c.Hints) > maxHints {
		return fmt.Errorf("hints: %d of them, at most %d", len(c.Hints), maxHints)
	}
	for k, v := range c.Hints {
		if out.RuntimeHints == nil {
			out.RuntimeHints = map[string]string{}
		}
		out.RuntimeHints[validUTF8(k)] = validUTF8(v)
	}
	out.RuntimeInit = c.RuntimeInit
	for k, v := range c.Metadata {
		if out.Metadata == nil {
			out.Metadata = map[string]string{}
		}
		out.Metadata[validUTF8(k)] = validUTF8(v)
	}
	return nil
}

// approval reads a resume entry: "cancelled" rejects; "resolved" approves when the
// payload is true or {"approved": true}, and rejects otherwise, with payload.reason.
func approval(r resumeEntry) (loop.Approval, error) {
	switch r.Status {
	case "cancelled":
		return loop.Approval{Reason: "cancelled by the user"}, nil
	case "resolved":
	default:
		return loop.Approval{}, fmt.Errorf("status %q: want resolved or cancelled", r.Status)
	}
	p := bytes.TrimSpace(r.Payload)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return loop.Approval{}, errors.New(`a resolved approval needs a payload: {"approved": true|false, "reason": "..."}`)
	}
	var b bool
	if json.Unmarshal(p, &b) == nil {
		return loop.Approval{Approved: b}, nil
	}
	var obj struct {
		Approved *bool          `json:"approved"`
		Reason   string         `json:"reason"`
		Input    map[string]any `json:"input"` // the answer to an input_required interrupt
		// A grant (docs/approvals.md): scope once|session|user, for_rule, hours (user
		// scope; session optional); args_hash binds the answer to the arguments shown.
		loop.GrantAnswer
		ArgsHash string `json:"args_hash"`
	}
	if err := json.Unmarshal(p, &obj); err != nil || obj.Approved == nil {
		return loop.Approval{}, errors.New(`payload: want true, false or {"approved": true|false, "reason": "...", "input": {...}}`)
	}
	a, err := obj.Widen(loop.Approval{Approved: *obj.Approved, Reason: obj.Reason, ArgsHash: obj.ArgsHash})
	if err != nil {
		return loop.Approval{}, errors.New("payload: " + err.Error())
	}
	if obj.Input != nil {
		a.Input, _ = json.Marshal(obj.Input)
	}
	return a, nil
}

// contentParts reads AG-UI content: a string, or parts of type text or image (url or
// data source).
func contentParts(raw json.RawMessage) ([]loop.Part, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []loop.Part{loop.TextPart(validUTF8(s))}, nil
	}
	var parts []inputPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, errors.New("content: want a string or a list of parts")
	}
	var out []loop.Part
	for i, p := range parts {
		part, err := p.toLoop()
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		out = append(out, part)
	}
	return out, nil
}

// validUTF8 replaces each run of invalid bytes in s with U+FFFD.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
