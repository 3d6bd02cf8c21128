package loop

// State is where a run is in its state machine. Every transition emits a status event.
//
//	idle → preparing → model_running ⇄ tool_running (⇄ awaiting_human)
//	                 → completed | failed | aborted
type State string

const (
	StateIdle          State = "idle"
	StatePreparing     State = "preparing"
	StateModelRunning  State = "model_running"
	StateToolRunning   State = "tool_running"
	StateAwaitingHuman State = "awaiting_human"
	StateCompleted     State = "completed"
	StateFailed        State = "failed"
	StateAborted       State = "aborted"
)

// Status is how a run ended. Incomplete means a limit or policy ended it and the final
// answer is a best-effort summary.
type Status string

const (
	StatusCompleted  Status = "completed"
	StatusIncomplete Status = "incomplete"
	StatusFailed     Status = "failed"
	StatusAborted    Status = "aborted"
	// StatusInterrupted: the run stopped to wait for a human (an Approver returned
	// ErrApprovalPending). A later run on the session with RunInput.Approvals resumes it.
	StatusInterrupted Status = "interrupted"
)

// Reason says why a run ended.
type Reason string

const (
	ReasonEndTurn          Reason = "end_turn"
	ReasonDoneTool         Reason = "done_tool"
	ReasonStructuredOutput Reason = "structured_output"
	ReasonMaxIterations    Reason = "max_iterations"
	ReasonMaxToolRounds    Reason = "max_tool_rounds"
	ReasonMaxDuration      Reason = "max_duration"
	ReasonDuplicateCall    Reason = "duplicate_tool_call"
	ReasonToolCallLimit    Reason = "tool_call_limit"
	ReasonBudgetExceeded   Reason = "budget_exceeded"
	ReasonHookStop         Reason = "hook_stop"
	ReasonDecodingFailed   Reason = "output_decoding_failed"
	ReasonError            Reason = "error"
	ReasonCancelled        Reason = "cancelled"
	ReasonApprovalRequired Reason = "approval_required"
	ReasonMaxTokens        Reason = "max_tokens"       // the model's output limit cut the answer (L15)
	ReasonContentFilter    Reason = "content_filter"   // the provider's filter stopped the answer (L15)
	ReasonClientToolCall   Reason = "client_tool_call" // calls wait for the caller's results (L16)
	ReasonMaxHandoffs      Reason = "max_handoffs"     // a transfer past the run's hand-off limit (team.go)
	ReasonDirectCall       Reason = "direct_call"      // Agent.DirectCall's one call went through the pipeline (L22)
	ReasonSampled          Reason = "sampled"          // Agent.Sample's one model call was answered (L24)
)
