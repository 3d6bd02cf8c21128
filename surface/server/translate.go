package server

import (
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/loop"
)

// translator turns one run's loop events into AG-UI events (docs/loop.md#events):
//
//	run_started                 → RUN_STARTED
//	model_delta text            → TEXT_MESSAGE_START (first delta), TEXT_MESSAGE_CONTENT
//	model_delta reasoning       → REASONING_START, REASONING_MESSAGE_START (first delta),
//	                              REASONING_MESSAGE_CONTENT
//	model_delta tool_call       → closes the text; TOOL_CALL_START once the call's id and
//	                              name are known, then TOOL_CALL_ARGS per fragment
//	model_delta finish          → closes the text, reasoning and tool calls streamed
//	                              (…_END): the model is done, before the loop's bookkeeping
//	assistant_message           → emits whole messages for text or reasoning that was not
//	                              streamed, and TOOL_CALL_START, TOOL_CALL_ARGS,
//	                              TOOL_CALL_END for each call that was not
//	state                       → STATE_SNAPSHOT
//	handoff                     → STEP_FINISHED "agent:FROM" (when open), CUSTOM
//	                              agenthost.handoff, STEP_STARTED "agent:TO"
//	step_start / step_complete  → STEP_STARTED / STEP_FINISHED (stepName "tool:ID")
//	tool_result                 → TOOL_CALL_RESULT
//	run_finished completed,
//	incomplete                  → RUN_FINISHED outcome success, result {status, reason, text}
//	run_finished interrupted    → RUN_FINISHED outcome interrupt, one interrupt per
//	                              approval_required event (id = tool call id)
//	run_finished aborted        → RUN_FINISHED outcome cancelled
//	run_finished failed         → RUN_ERROR {message: the last error event's, code: reason}
//	status, usage, context_update, hook, guardrail, error
//	                            → CUSTOM {name: "agenthost.<type>", value: the event's data}
//	a nested run's event (path) → its run_started / run_finished: STEP_STARTED /
//	                              STEP_FINISHED "agent:PATH"; approval_required: an
//	                              interrupt of this run; deltas: nothing; the rest:
//	                              CUSTOM agenthost.nested {the whole event}
//
// text, reasoning, tool_call, approval_required and final carry nothing the events above
// do not, and are folded into them. Before RUN_FINISHED or RUN_ERROR every message and
// step still open is closed, as AG-UI requires. Message ids are RUNID:msg:N (assistant
// message N of the run), RUNID:reasoning:N, and RUNID:result:CALLID.
//
// A translator is used by one goroutine.
type translator struct {
	// Snapshot, when set, is sent as MESSAGES_SNAPSHOT right after RUN_STARTED.
	Snapshot []message
	// Supplied are the ids of the tool calls whose results the client sent with the
	// run (client tools, L16). Their tool_result is not sent back as TOOL_CALL_RESULT:
	// an AG-UI client adds a tool message for every TOOL_CALL_RESULT (the official one
	// does not look at the id), so it would hold its own answer twice.
	Supplied map[string]bool

	threadID, runID string

	n             int            // assistant messages completed in this run
	textOpen      bool           // a TEXT_MESSAGE_START of message n is not yet ended
	textSent      bool           // message n's text was streamed
	reasoningOpen bool           // a reasoning message of message n is not yet ended
	reasoningSent bool           // message n's reasoning was streamed
	calls         []streamedCall // tool calls of message n seen in deltas
	steps         []string
	interrupts    []interrupt
	final         *loop.FinalData
	lastError     string
	model         string
	began         bool // RUN_STARTED was sent (a queued run sends it with its first position)
}

// streamedCall is a tool call whose arguments arrive in deltas.
type streamedCall struct {
	index          int
	id, name, args string
	started, ended bool
}

// newTranslator starts translating a run. threadID is the session id.
func newTranslator(threadID, runID string) *translator {
	return &translator{threadID: threadID, runID: runID}
}

func (t *translator) msgID() string       { return fmt.Sprintf("%s:msg:%d", t.runID, t.n) }
func (t *translator) reasoningID() string { return fmt.Sprintf("%s:reasoning:%d", t.runID, t.n) }

// Translate returns the AG-UI events for one loop event, possibly none.
func (t *translator) Translate(e loop.Event) []aguiEvent {
	b := func(typ string) base { return base{Type: typ, Timestamp: e.Time.UnixMilli()} }
	if e.Time.IsZero() {
		b = func(typ string) base { return base{Type: typ} }
	}
	if e.Path != "" {
		return t.nested(b, e)
	}
	var out []aguiEvent
	switch d := e.Data.(type) {
	case *loop.QueuedData: // the host's admission queue: the stream opens while the run waits
		out = t.begin(out, b)
		out = append(out, t.custom(b, e))
	case *loop.RunStartedData:
		t.model = d.Model
		out = t.begin(out, b)
		if t.Snapshot != nil {
			out = append(out, messagesSnapshot{base: b(aguiMessagesSnapshot), Messages: t.Snapshot})
		}
	case *loop.ModelDeltaData:
		out = t.modelDelta(out, b, *d)
	case *loop.StateData:
		out = append(out, stateSnapshot{base: b(aguiStateSnapshot), Snapshot: d.State})
	case *loop.HandoffData:
		// The switch shows as a step named after the acting agent, open until the next
		// hand-off or the run's end; the CUSTOM event carries the details.
		out = t.closeText(t.closeReasoning(out, b), b)
		out = t.finishStep(out, b, "agent:"+d.From)
		out = append(out, t.custom(b, e))
		t.steps = append(t.steps, "agent:"+d.To)
		out = append(out, aguiStep{base: b(aguiStepStarted), StepName: "agent:" + d.To})
	case *loop.AssistantMessageData:
		out = t.assistantMessage(out, b, d.Message)
	case *loop.StepStartData:
		name := stepName(d.ID)
		t.steps = append(t.steps, name)
		out = append(out, aguiStep{base: b(aguiStepStarted), StepName: name})
	case *loop.StepCompleteData:
		out = t.finishStep(out, b, stepName(d.ID))
	case *loop.ToolResultData:
		out = t.toolResult(out, b, *d)
	case *loop.ToolCallData:
		if e.Type == loop.EventApproval {
			t.interrupts = append(t.interrupts, interrupt{ID: d.ID, Reason: string(loop.ReasonApprovalRequired),
				Message:    fmt.Sprintf("Allow %s %s?", d.Name, string(d.Arguments)),
				ToolCallID: d.ID,
				Metadata:   approvalMetadata(d, "")})
		}
	case *loop.InputRequiredData: // a tool asks for a human's input (an MCP elicitation)
		t.interrupts = append(t.interrupts, interrupt{ID: d.ID, Reason: "input_required", Message: d.Message, ToolCallID: d.ID,
			Metadata: inputMetadata(d)})
	case *loop.FinalData:
		f := *d
		t.final = &f
	case *loop.ErrorData:
		t.lastError = d.Message
		out = append(out, t.custom(b, e))
	case *loop.RunFinishedData:
		out = t.finish(out, b, *d)
	case *loop.TextData: // text and reasoning: already streamed or sent with assistant_message
	default:
		out = append(out, t.custom(b, e))
	}
	return out
}

// modelDelta translates one streamed fragment of the model's answer.
func (t *translator) modelDelta(out []aguiEvent, b func(string) base, d loop.ModelDeltaData) []aguiEvent {
	switch d.Kind {
	case loop.DeltaText:
		if d.Text == "" {
			break
		}
		out = t.closeReasoning(out, b)
		if !t.textOpen {
			out = append(out, messageStart{base: b(aguiTextMessageStart), MessageID: t.msgID(), Role: "assistant"})
			t.textOpen, t.textSent = true, true
		}
		out = append(out, messageContent{base: b(aguiTextMessageContent), MessageID: t.msgID(), Delta: d.Text})
	case loop.DeltaReasoning:
		if d.Text == "" || t.textOpen {
			break // reasoning after the text has started is kept in the message only
		}
		if !t.reasoningOpen {
			id := t.reasoningID()
			out = append(out, messageRef{base: b(aguiReasoningStart), MessageID: id},
				messageStart{base: b(aguiReasoningMessageStart), MessageID: id, Role: "reasoning"})
			t.reasoningOpen, t.reasoningSent = true, true
		}
		out = append(out, messageContent{base: b(aguiReasoningMessageContent), MessageID: t.reasoningID(), Delta: d.Text})
	case loop.DeltaToolCall:
		out = t.toolCallDelta(t.closeText(t.closeReasoning(out, b), b), b, d)
	case loop.DeltaFinish:
		out = t.endStreamedCalls(t.closeText(t.closeReasoning(out, b), b), b)
	}
	return out
}

// toolResult is TOOL_CALL_RESULT, except for a result the client supplied itself.
func (t *translator) toolResult(out []aguiEvent, b func(string) base, d loop.ToolResultData) []aguiEvent {
	if t.Supplied[d.ID] {
		return out
	}
	ev := toolCallResult{base: b(aguiToolCallResult), MessageID: t.runID + ":result:" + d.ID,
		ToolCallID: d.ID, Content: d.Content, Role: "tool"}
	ev.Metadata = map[string]any{"durationMs": d.DurationMS, "toolName": d.Name}
	if d.IsError {
		ev.Metadata["isError"] = true
	}
	if d.Cached { // answered from the tool-result cache: the tool did not run
		ev.Metadata["cached"], ev.Metadata["cacheAgeMs"] = true, d.CacheAgeMS
	}
	if len(d.Media) > 0 { // references: GET /v1/sessions/{id}/attachments/{ref} has the bytes
		ev.Metadata["attachments"] = d.Media
	}
	return append(out, ev)
}

func stepName(callID string) string { return "tool:" + callID }

// nested translates an event of a nested run (an ask_NAME or plan step sub-run,
// Event.Path): its start and end are a step "agent:PATH" inside the call's step; an
// approval it waits for is an interrupt of this run like its own (the answer, by call
// id, resumes it); the rest is CUSTOM "agenthost.nested" with the whole event, so a
// client can show the nested run's work without mistaking it for this run's messages.
func (t *translator) nested(b func(string) base, e loop.Event) []aguiEvent {
	step := "agent:" + e.Path
	switch d := e.Data.(type) {
	case *loop.RunStartedData:
		t.steps = append(t.steps, step)
		return []aguiEvent{aguiStep{base: b(aguiStepStarted), StepName: step}}
	case *loop.RunFinishedData:
		return t.finishStep(nil, b, step)
	case *loop.ToolCallData:
		if e.Type == loop.EventApproval {
			t.interrupts = append(t.interrupts, interrupt{ID: d.ID, Reason: string(loop.ReasonApprovalRequired),
				Message:    fmt.Sprintf("Allow %s %s (asked by %s)?", d.Name, string(d.Arguments), e.Path),
				ToolCallID: d.ID,
				Metadata:   approvalMetadata(d, e.Path)})
		}
	case *loop.ModelDeltaData:
		return nil // the nested run's answer arrives whole in its assistant_message
	}
	return []aguiEvent{custom{base: b(aguiCustom), Name: "agenthost.nested", Value: e}}
}

// begin sends RUN_STARTED once: a run that waited in the admission queue sent it with
// its first position.
func (t *translator) begin(out []aguiEvent, b func(string) base) []aguiEvent {
	if t.began {
		return out
	}
	t.began = true
	return append(out, runStarted{base: b(aguiRunStarted), ThreadID: t.threadID, RunID: t.runID})
}

func (t *translator) custom(b func(string) base, e loop.Event) aguiEvent {
	return custom{base: b(aguiCustom), Name: "agenthost." + string(e.Type), Value: e.Data}
}

func (t *translator) closeReasoning(out []aguiEvent, b func(string) base) []aguiEvent {
	if t.reasoningOpen {
		id := t.reasoningID()
		out = append(out, messageRef{base: b(aguiReasoningMessageEnd), MessageID: id},
			messageRef{base: b(aguiReasoningEnd), MessageID: id})
		t.reasoningOpen = false
	}
	return out
}

func (t *translator) closeText(out []aguiEvent, b func(string) base) []aguiEvent {
	if t.textOpen {
		out = append(out, messageRef{base: b(aguiTextMessageEnd), MessageID: t.msgID()})
		t.textOpen = false
	}
	return out
}

// assistantMessage closes what was streamed, sends what was not, then the tool calls.
func (t *translator) assistantMessage(out []aguiEvent, b func(string) base, m loop.Message) []aguiEvent {
	out = t.closeReasoning(out, b)
	if m.Reasoning != "" && !t.reasoningSent && !t.textSent {
		id := t.reasoningID()
		out = append(out, messageRef{base: b(aguiReasoningStart), MessageID: id},
			messageStart{base: b(aguiReasoningMessageStart), MessageID: id, Role: "reasoning"},
			messageContent{base: b(aguiReasoningMessageContent), MessageID: id, Delta: m.Reasoning},
			messageRef{base: b(aguiReasoningMessageEnd), MessageID: id},
			messageRef{base: b(aguiReasoningEnd), MessageID: id})
	}
	out = t.closeText(out, b)
	if text := m.Text(); text != "" && !t.textSent {
		id := t.msgID()
		out = append(out, messageStart{base: b(aguiTextMessageStart), MessageID: id, Role: "assistant"},
			messageContent{base: b(aguiTextMessageContent), MessageID: id, Delta: text},
			messageRef{base: b(aguiTextMessageEnd), MessageID: id})
	}
	for _, c := range m.ToolCalls {
		if sc := t.streamed(c.ID); sc != nil {
			// Streamed: send what the deltas did not carry, if anything, and end it.
			if rest, ok := strings.CutPrefix(c.Arguments, sc.args); ok && rest != "" && !sc.ended {
				out = append(out, toolCallArgs{base: b(aguiToolCallArgs), ToolCallID: c.ID, Delta: rest})
			}
			if !sc.ended {
				out = append(out, toolCallEnd{base: b(aguiToolCallEnd), ToolCallID: c.ID})
				sc.ended = true
			}
			continue
		}
		out = append(out, toolCallStart{base: b(aguiToolCallStart), ToolCallID: c.ID, ToolCallName: c.Name, ParentMessageID: t.msgID()})
		if c.Arguments != "" {
			out = append(out, toolCallArgs{base: b(aguiToolCallArgs), ToolCallID: c.ID, Delta: c.Arguments})
		}
		out = append(out, toolCallEnd{base: b(aguiToolCallEnd), ToolCallID: c.ID})
	}
	out = t.endStreamedCalls(out, b) // a streamed call the message does not hold
	t.calls = t.calls[:0]
	t.n++
	t.textSent, t.reasoningSent = false, false
	return out
}

// toolCallDelta follows one streamed argument fragment. A call starts (TOOL_CALL_START)
// once its id and name are known, with the fragments received so far as its first
// TOOL_CALL_ARGS; later fragments are sent as they come.
func (t *translator) toolCallDelta(out []aguiEvent, b func(string) base, d loop.ModelDeltaData) []aguiEvent {
	var c *streamedCall
	for i := range t.calls {
		if t.calls[i].index == d.ToolCall.Index {
			c = &t.calls[i]
		}
	}
	if c == nil {
		t.calls = append(t.calls, streamedCall{index: d.ToolCall.Index})
		c = &t.calls[len(t.calls)-1]
	}
	if c.id == "" {
		c.id = d.ToolCall.ID
	}
	if c.name == "" {
		c.name = d.ToolCall.Name
	}
	c.args += d.Text
	switch {
	case c.ended:
	case !c.started && c.id != "" && c.name != "":
		c.started = true
		out = append(out, toolCallStart{base: b(aguiToolCallStart), ToolCallID: c.id, ToolCallName: c.name, ParentMessageID: t.msgID()})
		if c.args != "" {
			out = append(out, toolCallArgs{base: b(aguiToolCallArgs), ToolCallID: c.id, Delta: c.args})
		}
	case c.started && d.Text != "":
		out = append(out, toolCallArgs{base: b(aguiToolCallArgs), ToolCallID: c.id, Delta: d.Text})
	}
	return out
}

// streamed is the started call with this id, or nil.
func (t *translator) streamed(id string) *streamedCall {
	for i := range t.calls {
		if t.calls[i].started && t.calls[i].id == id {
			return &t.calls[i]
		}
	}
	return nil
}

// endStreamedCalls ends every started call still open (AG-UI needs each ended).
func (t *translator) endStreamedCalls(out []aguiEvent, b func(string) base) []aguiEvent {
	for i := range t.calls {
		if c := &t.calls[i]; c.started && !c.ended {
			out = append(out, toolCallEnd{base: b(aguiToolCallEnd), ToolCallID: c.id})
			c.ended = true
		}
	}
	return out
}

func (t *translator) finishStep(out []aguiEvent, b func(string) base, name string) []aguiEvent {
	for i, s := range t.steps {
		if s == name {
			t.steps = append(t.steps[:i], t.steps[i+1:]...)
			return append(out, aguiStep{base: b(aguiStepFinished), StepName: name})
		}
	}
	return out
}

// finish closes everything still open and ends the run.
func (t *translator) finish(out []aguiEvent, b func(string) base, d loop.RunFinishedData) []aguiEvent {
	out = t.closeReasoning(out, b)
	out = t.closeText(out, b)
	out = t.endStreamedCalls(out, b)
	for len(t.steps) > 0 {
		out = t.finishStep(out, b, t.steps[0])
	}
	var usage []tokenUsage
	if u := d.Usage; u.TotalTokens > 0 || u.PromptTokens > 0 || u.CompletionTokens > 0 {
		usage = []tokenUsage{{Model: t.model, InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
			TotalTokens: u.PromptTokens + u.CompletionTokens}}
	}
	if d.Status == loop.StatusFailed {
		msg := t.lastError
		if msg == "" {
			msg = "the run failed"
		}
		return append(out, runError{base: b(aguiRunError), Message: msg, Code: string(d.Reason), Usage: usage})
	}
	ev := runFinished{base: b(aguiRunFinished), ThreadID: t.threadID, RunID: t.runID, Usage: usage,
		Result: &runResult{Status: string(d.Status), Reason: string(d.Reason)}}
	if t.final != nil {
		ev.Result.Text, ev.Result.Output = t.final.Text, t.final.Output
	}
	switch d.Status {
	case loop.StatusInterrupted:
		if len(t.interrupts) > 0 {
			ev.Outcome = &outcome{Type: "interrupt", Interrupts: t.interrupts}
		}
	case loop.StatusAborted:
		ev.Outcome = &outcome{Type: "cancelled"}
	default:
		ev.Outcome = &outcome{Type: "success"}
	}
	return append(out, ev)
}

// inputMetadata is an input_required interrupt's metadata: the tool, the answer's
// schema, and the link that connects the user's account (connect), when it asks that.
func inputMetadata(d *loop.InputRequiredData) map[string]any {
	m := map[string]any{"toolName": d.Name, "schema": d.Schema}
	if d.Connect != "" {
		m["connect"] = d.Connect
	}
	return m
}

// approvalMetadata is an approval interrupt's metadata: the call, what the answer is
// bound to (argsHash) and when the request expires (expiresAt; expiry denies), the
// rule that asked, and the nested run's path.
func approvalMetadata(d *loop.ToolCallData, path string) map[string]any {
	m := map[string]any{"toolName": d.Name, "arguments": d.Arguments}
	for k, v := range map[string]string{"argsHash": d.ArgsHash, "expiresAt": d.ExpiresAt, "rule": d.Rule, "path": path} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}
