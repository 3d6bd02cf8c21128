package loop

import "context"

// Streamed tool results (docs/loop.md, "Streamed tool results"). A tool may show its
// result as it comes — a long search's hits, a command's output — by calling
// StreamResult from its call's context: each piece is a tool_result_delta event of the
// run, delivered live between the call's tool_call and its tool_result and, like a
// model_delta, never stored (it takes a seq number; L17). The result the tool returns is
// the call's result, whole: that is what the tool_result guardrails check, what is
// stored (L21) and what the model sees; the deltas are a preview of it, and the tool
// returns all of it, not the part it has not streamed. Deltas are reports from code the
// host may not trust, so they share the run's bound on plugin reports (notify.go: each
// cut at 8 KiB, at most 1000 a run). A run with guardrails gets no deltas: they would
// show text the tool_result guardrails (redaction among them) have not seen.

// EventToolResultDelta is a piece of a tool call's result, live only.
const EventToolResultDelta EventType = "tool_result_delta"

// ToolResultDeltaData is the payload of EventToolResultDelta: the call's id and the
// piece's text.
type ToolResultDeltaData struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// StreamResult sends a piece of the result of the tool call ctx belongs to (the context
// the loop gave the tool) as a tool_result_delta event. It reports false when it was not
// sent: ctx is no tool call's, the text is empty, or the run has ended or has
// guardrails. Past the run's bound on reports it is dropped silently.
func StreamResult(ctx context.Context, text string) bool {
	j, _ := ctx.Value(noticeKey{}).(*journal)
	id, _ := ctx.Value(callIDKey{}).(*string)
	if j == nil || id == nil || *id == "" || j.noDeltas || text == "" {
		return false
	}
	return j.notice(EventToolResultDelta, &ToolResultDeltaData{ID: *id, Text: clip(text)})
}
