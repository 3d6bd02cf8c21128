package server

import (
	"fmt"

	"github.com/agenthost/agenthost/loop"
)

// Translator turns one run's loop events into AG-UI events (docs/loop.md#events):
//
//	run_started                 → RUN_STARTED
//	model_delta text            → TEXT_MESSAGE_START (first delta), TEXT_MESSAGE_CONTENT
//	model_delta reasoning       → REASONING_START, REASONING_MESSAGE_START (first delta),
//	                              REASONING_MESSAGE_CONTENT
//	assistant_message           → closes the open messages (…_END), emits whole messages
//	                              for text or reasoning that was not streamed, then per tool
//	                              call TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END
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
//
// text, reasoning, tool_call, approval_required and final carry nothing the events above
// do not, and are folded into them. Before RUN_FINISHED or RUN_ERROR every message and
// step still open is closed, as AG-UI requires. Message ids are RUNID:msg:N (assistant
// message N of the run), RUNID:reasoning:N, and RUNID:result:CALLID.
//
// A Translator is used by one goroutine.
type Translator struct {
	threadID, runID string

	n             int  // assistant messages completed in this run
	textOpen      bool // a TEXT_MESSAGE_START of message n is not yet ended
	textSent      bool // message n's text was streamed
	reasoningOpen bool // a reasoning message of message n is not yet ended
	reasoningSent bool // message n's reasoning was streamed
	steps         []string
	interrupts    []Interrupt
	final         *loop.FinalData
	lastError     string
	model         string
}

// NewTranslator starts translating a run. threadID is the session id.
func NewTranslator(threadID, runID string) *Translator {
	return &Translator{threadID: threadID, runID: runID}
}

func (t *Translator) msgID() string       { return fmt.Sprintf("%s:msg:%d", t.runID, t.n) }
func (t *Translator) reasoningID() string { return fmt.Sprintf("%s:reasoning:%d", t.runID, t.n) }

// Translate returns the AG-UI events for one loop event, possibly none.
func (t *Translator) Translate(e loop.Event) []AGUIEvent {
	b := func(typ string) base { return base{Type: typ, Timestamp: e.Time.UnixMilli()} }
	if e.Time.IsZero() {
		b = func(typ string) base { return base{Type: typ} }
	}
	var out []AGUIEvent
	switch d := e.Data.(type) {
	case loop.RunStartedData:
		t.model = d.Model
		out = append(out, RunStarted{base: b(aguiRunStarted), ThreadID: t.threadID, RunID: t.runID})
	case loop.ModelDeltaData:
		switch d.Kind {
		case loop.DeltaText:
			if d.Text == "" {
				break
			}
			out = t.closeReasoning(out, b)
			if !t.textOpen {
				out = append(out, MessageStart{base: b(aguiTextMessageStart), MessageID: t.msgID(), Role: "assistant"})
				t.textOpen, t.textSent = true, true
			}
			out = append(out, MessageContent{base: b(aguiTextMessageContent), MessageID: t.msgID(), Delta: d.Text})
		case loop.DeltaReasoning:
			if d.Text == "" || t.textOpen {
				break // reasoning after the text has started is kept in the message only
			}
			if !t.reasoningOpen {
				id := t.reasoningID()
				out = append(out, MessageRef{base: b(aguiReasoningStart), MessageID: id},
					MessageStart{base: b(aguiReasoningMessageStart), MessageID: id, Role: "reasoning"})
				t.reasoningOpen, t.reasoningSent = true, true
			}
			out = append(out, MessageContent{base: b(aguiReasoningMessageContent), MessageID: t.reasoningID(), Delta: d.Text})
		}
	case loop.AssistantMessageData:
		out = t.assistantMessage(out, b, d.Message)
	case loop.StepStartData:
		name := stepName(d.ID)
		t.steps = append(t.steps, name)
		out = append(out, Step{base: b(aguiStepStarted), StepName: name})
	case loop.StepCompleteData:
		out = t.finishStep(out, b, stepName(d.ID))
	case loop.ToolResultData:
		ev := ToolCallResult{base: b(aguiToolCallResult), MessageID: t.runID + ":result:" + d.ID,
			ToolCallID: d.ID, Content: d.Content, Role: "tool"}
		if d.IsError {
			ev.Metadata = map[string]any{"isError": true}
		}
		out = append(out, ev)
	case loop.ToolCallData:
		if e.Type == loop.EventApproval {
			t.interrupts = append(t.interrupts, Interrupt{ID: d.ID, Reason: string(loop.ReasonApprovalRequired),
				Message:    fmt.Sprintf("Allow %s %s?", d.Name, string(d.Arguments)),
				ToolCallID: d.ID,
				Metadata:   map[string]any{"toolName": d.Name, "arguments": d.Arguments}})
		}
	case loop.FinalData:
		f := d
		t.final = &f
	case loop.ErrorData:
		t.lastError = d.Message
		out = append(out, t.custom(b, e))
	case loop.RunFinishedData:
		out = t.finish(out, b, d)
	case loop.TextData: // text and reasoning: already streamed or sent with assistant_message
	default:
		out = append(out, t.custom(b, e))
	}
	return out
}

func stepName(callID string) string { return "tool:" + callID }

func (t *Translator) custom(b func(string) base, e loop.Event) AGUIEvent {
	return Custom{base: b(aguiCustom), Name: "agenthost." + string(e.Type), Value: e.Data}
}

func (t *Translator) closeReasoning(out []AGUIEvent, b func(string) base) []AGUIEvent {
	if t.reasoningOpen {
		id := t.reasoningID()
		out = append(out, MessageRef{base: b(aguiReasoningMessageEnd), MessageID: id},
			MessageRef{base: b(aguiReasoningEnd), MessageID: id})
		t.reasoningOpen = false
	}
	return out
}

func (t *Translator) closeText(out []AGUIEvent, b func(string) base) []AGUIEvent {
	if t.textOpen {
		out = append(out, MessageRef{base: b(aguiTextMessageEnd), MessageID: t.msgID()})
		t.textOpen = false
	}
	return out
}

// assistantMessage closes what was streamed, sends what was not, then the tool calls.
func (t *Translator) assistantMessage(out []AGUIEvent, b func(string) base, m loop.Message) []AGUIEvent {
	out = t.closeReasoning(out, b)
	if m.Reasoning != "" && !t.reasoningSent && !t.textSent {
		id := t.reasoningID()
		out = append(out, MessageRef{base: b(aguiReasoningStart), MessageID: id},
			MessageStart{base: b(aguiReasoningMessageStart), MessageID: id, Role: "reasoning"},
			MessageContent{base: b(aguiReasoningMessageContent), MessageID: id, Delta: m.Reasoning},
			MessageRef{base: b(aguiReasoningMessageEnd), MessageID: id},
			MessageRef{base: b(aguiReasoningEnd), MessageID: id})
	}
	out = t.closeText(out, b)
	if text := m.Text(); text != "" && !t.textSent {
		id := t.msgID()
		out = append(out, MessageStart{base: b(aguiTextMessageStart), MessageID: id, Role: "assistant"},
			MessageContent{base: b(aguiTextMessageContent), MessageID: id, Delta: text},
			MessageRef{base: b(aguiTextMessageEnd), MessageID: id})
	}
	for _, c := range m.ToolCalls {
		out = append(out, ToolCallStart{base: b(aguiToolCallStart), ToolCallID: c.ID, ToolCallName: c.Name, ParentMessageID: t.msgID()})
		if c.Arguments != "" {
			out = append(out, ToolCallArgs{base: b(aguiToolCallArgs), ToolCallID: c.ID, Delta: c.Arguments})
		}
		out = append(out, ToolCallEnd{base: b(aguiToolCallEnd), ToolCallID: c.ID})
	}
	t.n++
	t.textSent, t.reasoningSent = false, false
	return out
}

func (t *Translator) finishStep(out []AGUIEvent, b func(string) base, name string) []AGUIEvent {
	for i, s := range t.steps {
		if s == name {
			t.steps = append(t.steps[:i], t.steps[i+1:]...)
			return append(out, Step{base: b(aguiStepFinished), StepName: name})
		}
	}
	return out
}

// finish closes everything still open and ends the run.
func (t *Translator) finish(out []AGUIEvent, b func(string) base, d loop.RunFinishedData) []AGUIEvent {
	out = t.closeReasoning(out, b)
	out = t.closeText(out, b)
	for len(t.steps) > 0 {
		out = t.finishStep(out, b, t.steps[0])
	}
	var usage []TokenUsage
	if u := d.Usage; u.TotalTokens > 0 || u.PromptTokens > 0 || u.CompletionTokens > 0 {
		usage = []TokenUsage{{Model: t.model, InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
			TotalTokens: u.PromptTokens + u.CompletionTokens}}
	}
	if d.Status == loop.StatusFailed {
		msg := t.lastError
		if msg == "" {
			msg = "the run failed"
		}
		return append(out, RunError{base: b(aguiRunError), Message: msg, Code: string(d.Reason), Usage: usage})
	}
	ev := RunFinished{base: b(aguiRunFinished), ThreadID: t.threadID, RunID: t.runID, Usage: usage,
		Result: &RunResult{Status: string(d.Status), Reason: string(d.Reason)}}
	if t.final != nil {
		ev.Result.Text, ev.Result.Output = t.final.Text, t.final.Output
	}
	switch d.Status {
	case loop.StatusInterrupted:
		if len(t.interrupts) > 0 {
			ev.Outcome = &Outcome{Type: "interrupt", Interrupts: t.interrupts}
		}
	case loop.StatusAborted:
		ev.Outcome = &Outcome{Type: "cancelled"}
	default:
		ev.Outcome = &Outcome{Type: "success"}
	}
	return append(out, ev)
}
