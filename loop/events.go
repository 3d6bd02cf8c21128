package loop

import (
	"encoding/json"
	"fmt"
	"time"
)

// EventType names an event (docs/loop.md#events).
type EventType string

const (
	EventRunStarted       EventType = "run_started"
	EventStatus           EventType = "status"
	EventModelDelta       EventType = "model_delta"
	EventReasoning        EventType = "reasoning"
	EventText             EventType = "text"
	EventAssistantMessage EventType = "assistant_message"
	EventStepStart        EventType = "step_start"
	EventToolCall         EventType = "tool_call"
	EventApproval         EventType = "approval_required"
	EventToolResult       EventType = "tool_result"
	EventStepComplete     EventType = "step_complete"
	EventUsage            EventType = "usage"
	EventContextUpdate    EventType = "context_update"
	EventHook             EventType = "hook"
	EventGuardrail        EventType = "guardrail"
	EventError            EventType = "error"
	EventFinal            EventType = "final"
	EventRunFinished      EventType = "run_finished"
	EventPluginLog        EventType = "plugin_log"
	EventProgress         EventType = "progress"
	EventCircuit          EventType = "circuit"
	EventState            EventType = "state"
	EventHandoff          EventType = "handoff"
)

// Event is one thing that happened in a run. Data holds a pointer to the typed payload
// for Type (one of the *Data structs below, *Usage for usage); it encodes to the
// snake_case object of docs/loop.md#events, and decodes back into a pointer to the same
// struct, so stored events read like live ones. A payload is the event's own and is
// never written again once emitted: it stays valid as long as the event is kept, and
// every copy of the event (the stream's, the stored one) shares it, so consumers read
// it and do not change it (doc/ARCHITECTURE.md, "Event payloads").
type Event struct {
	Seq       int64     `json:"seq"`
	Time      time.Time `json:"time"`
	SessionID string    `json:"session_id"`
	RunID     string    `json:"run_id"`
	Agent     string    `json:"agent"`
	Type      EventType `json:"type"`
	Data      any       `json:"data"`
	TraceID   string    `json:"trace_id,omitempty"` // RunInput.TraceID
	// Path is set on an event of a nested run (an ask_NAME sub-run, a plan step's
	// sub-run) delivered in its caller's stream: the agents from the top-level run's
	// down to the one that emitted it, "triage/billing". Its seq, session and run are
	// the nested run's, whose own session stores it; the caller's session does not.
	Path string `json:"path,omitempty"`
}

type (
	RunStartedData struct {
		Model string `json:"model"`
		User  string `json:"user,omitempty"`
		// Parent is set on a nested run (an ask_NAME's, a merge agent's ask, a plan
		// step's sub-run, any run started from within another's work): the run whose
		// ledger this one's is nested in (Ledger), whose usage therefore includes this
		// run's. Zero on a top-level run.
		Parent RunRef `json:"parent,omitzero"`
	}
	// RunRef names a run: its session and id.
	RunRef struct {
		Session string `json:"session"`
		Run     string `json:"run"`
	}
	StatusData struct {
		State State `json:"state"`
	}
	ModelDeltaData struct {
		CallIndex int       `json:"call_index"`
		Seq       int       `json:"seq"`
		Kind      DeltaKind `json:"kind"`
		Text      string    `json:"text"`
		// ToolCall names the call a tool_call delta's Text (argument fragment) belongs
		// to: its index in the answer, and its id and name when the fragment carries
		// them (usually the first fragment only).
		ToolCall ToolCallRef `json:"tool_call,omitzero"`
	}
	// ToolCallRef identifies the tool call of a streamed fragment.
	ToolCallRef struct {
		Index int    `json:"index"`
		ID    string `json:"id,omitempty"`
		Name  string `json:"name,omitempty"`
	}
	// HandoffData says the run continues under another agent: Depth is this hand-off's
	// number in the run (1 for the first).
	HandoffData struct {
		From   string `json:"from"`
		To     string `json:"to"`
		Depth  int    `json:"depth"`
		Reason string `json:"reason,omitempty"`
	}
	// RunMetrics count what a run did (run_finished.metrics).
	RunMetrics struct {
		ModelCalls int   `json:"model_calls"`
		ToolCalls  int   `json:"tool_calls"`
		ToolErrors int   `json:"tool_errors"`
		Steps      int   `json:"steps"` // tool rounds (and plan steps)
		Replans    int   `json:"replans"`
		Handoffs   int   `json:"handoffs"`
		DurationMS int64 `json:"duration_ms"`
	}
	// StateData is the run's client state (RunInput.State) after a context strategy
	// changed it.
	StateData struct {
		State json.RawMessage `json:"state"`
	}
	TextData struct {
		Text string `json:"text"`
	}
	AssistantMessageData struct {
		Message    Message    `json:"message"`
		StopReason StopReason `json:"stop_reason,omitempty"`
	}
	StepStartData struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	// ToolCallData carries the parsed arguments, or {"_raw": "..."} when they are not JSON.
	ToolCallData struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		// On approval_required: the hash of the canonical arguments the answer is bound
		// to, when the request expires (RFC 3339; expiry denies), the rule that asked.
		ArgsHash  string `json:"args_hash,omitempty"`
		ExpiresAt string `json:"expires_at,omitempty"`
		Rule      string `json:"rule,omitempty"`
		// FallbackFor is the id of the failed call this one stands in for (fallback.go).
		FallbackFor string `json:"fallback_for,omitempty"`
	}
	ToolResultData struct {
		ID         string `json:"id"`
		Name       string `json:"name"`
		Content    string `json:"content"`
		IsError    bool   `json:"is_error"`
		DurationMS int64  `json:"duration_ms"`
		// Refused says why a call was not made although the tool exists and its
		// arguments were valid: "denied" (the permission hook or approval_default) or
		// "rejected" (a human, or no approver where one was needed). Its result is an
		// error, but not the tool's: reports count these apart from tool errors.
		Refused string `json:"refused,omitempty"`
		// Cached says the result came from the tool-result cache (resultcache.go),
		// stored CacheAgeMS milliseconds before; the tool did not run.
		Cached     bool  `json:"cached,omitempty"`
		CacheAgeMS int64 `json:"cache_age_ms,omitempty"`
		// Fallback names the tool whose result this failed call carries (fallback.go).
		Fallback string `json:"fallback,omitempty"`
		// Media are the result's stored media parts, as references (attachment, type,
		// mime_type, name, size), never their bytes: how a client shows a tool's image
		// as it comes (GET /v1/sessions/{id}/attachments/{ref}).
		Media []Part `json:"media,omitempty"`
		// Group is the tool group the model called, when the call ran on one of its
		// members (name; toolgroup.go).
		Group string `json:"group,omitempty"`
	}
	StepCompleteData struct {
		ID     string `json:"id"`
		Status string `json:"status"` // ok | error
	}
	ContextUpdateData struct {
		Messages        int  `json:"messages"`
		EstimatedTokens int  `json:"estimated_tokens"`
		Overflow        bool `json:"overflow"`
		Compacted       int  `json:"compacted"`
		// Summarised: the compaction is the model's summary (compact.go).
		Summarised bool `json:"summarised,omitempty"`
	}
	HookData struct {
		Name    string  `json:"name"`
		Point   string  `json:"point"` // on_step | before_final
		Verdict Verdict `json:"verdict"`
		Reason  string  `json:"reason"`
	}
	GuardrailData struct {
		Name   string      `json:"name"`
		Stage  Stage       `json:"stage"`
		Action GuardAction `json:"action"`
		Reason string      `json:"reason"`
	}
	ErrorData struct {
		Kind      string `json:"kind"`
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
	}
	FinalData struct {
		Text   string          `json:"text"`
		Output json.RawMessage `json:"output"`
	}
	RunFinishedData struct {
		Status Status `json:"status"`
		Reason Reason `json:"reason"`
		Usage  Usage  `json:"usage"`
		// StopReason is the stop reason of the run's last model answer, if any.
		StopReason StopReason `json:"stop_reason,omitempty"`
		// PendingCalls are the client tool calls the caller must answer (L16).
		PendingCalls []ToolCall `json:"pending_calls,omitempty"`
		// Metrics count what the run did.
		Metrics RunMetrics `json:"metrics,omitzero"`
	}
)

// eventData decodes each event type's data into a pointer to its struct: the same shape
// the loop emits, so a stored or received event reads like a live one.
var eventData = map[EventType]func(json.RawMessage) (any, error){
	EventRunStarted: decodeAs[RunStartedData], EventStatus: decodeAs[StatusData],
	EventModelDelta: decodeAs[ModelDeltaData], EventReasoning: decodeAs[TextData], EventText: decodeAs[TextData],
	EventAssistantMessage: decodeAs[AssistantMessageData], EventStepStart: decodeAs[StepStartData],
	EventToolCall: decodeAs[ToolCallData], EventApproval: decodeAs[ToolCallData], EventInputRequired: decodeAs[InputRequiredData],
	EventToolResult: decodeAs[ToolResultData], EventStepComplete: decodeAs[StepCompleteData],
	EventUsage: decodeAs[Usage], EventContextUpdate: decodeAs[ContextUpdateData], EventHook: decodeAs[HookData],
	EventGuardrail: decodeAs[GuardrailData], EventError: decodeAs[ErrorData], EventFinal: decodeAs[FinalData],
	EventRunFinished: decodeAs[RunFinishedData], EventPluginLog: decodeAs[PluginLogData],
	EventProgress: decodeAs[ProgressData], EventCircuit: decodeAs[CircuitData], EventState: decodeAs[StateData],
	EventHandoff: decodeAs[HandoffData], EventPlan: decodeAs[PlanData], EventPlanStep: decodeAs[PlanStepData],
	EventEvaluation: decodeAs[EvaluationData], EventQueued: decodeAs[QueuedData], EventRuntime: decodeAs[RuntimeData],
	EventToolResultDelta: decodeAs[ToolResultDeltaData],
}

func decodeAs[T any](b json.RawMessage) (any, error) {
	var v T
	if len(b) > 0 {
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
	}
	return &v, nil
}

// UnmarshalJSON decodes Data into a pointer to the struct for the event's type (the same
// shape the loop emits).
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var raw struct {
		plain
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*e = Event(raw.plain)
	decode, ok := eventData[e.Type]
	if !ok {
		return fmt.Errorf("unknown event type %q", e.Type)
	}
	data, err := decode(raw.Data)
	if err != nil {
		return fmt.Errorf("event %d (%s): %w", e.Seq, e.Type, err)
	}
	e.Data = data
	return nil
}
