package loop

import "testing"

// An adapter's opaque reasoning state (Anthropic's signed thinking) stays with its
// assistant message: stored, and sent back on every later call of the session.
func TestReasoningStateGoesBackWithItsMessage(t *testing.T) {
	store := NewMemoryStore()
	m := script(
		turn{deltas: []Delta{
			{Seq: 1, Kind: DeltaReasoning, Text: "think"},
			{Seq: 2, Kind: DeltaReasoningState, Text: `[{"type":"thinking","signature":"old"}]`},
			{Seq: 3, Kind: DeltaReasoningState, Text: `[{"type":"thinking","signature":"sig1"}]`},
			{Seq: 4, Kind: DeltaToolCall, ToolCall: &ToolCallDelta{Index: 0, ID: "c1", Name: "echo", Arguments: `{}`}},
			{Seq: 5, Kind: DeltaUsage, Usage: &Usage{PromptTokens: 10, CompletionTokens: 2, CacheReadTokens: 8, CacheWriteTokens: 1}},
			{Seq: 6, Kind: DeltaFinish, StopReason: "tool_use"}}},
		turn{text: "done"},
		turn{text: "again"},
	)
	a := newAgent(t, Config{Model: m, Store: store, Tools: tools(t, echoTool())})
	res, _ := runCollect(t, a, userIn("s1", "go"))
	if res.Status != StatusCompleted || res.Usage.CacheReadTokens != 8 || res.Usage.CacheWriteTokens != 1 {
		t.Fatalf("run: %s usage %+v", res.Status, res.Usage)
	}
	runCollect(t, a, userIn("s1", "more"))
	for i, r := range m.requests()[1:] {
		var sent string
		for _, msg := range r.Messages {
			if msg.Role == RoleAssistant && len(msg.ToolCalls) > 0 {
				sent = msg.ReasoningState
			}
		}
		if sent != `[{"type":"thinking","signature":"sig1"}]` {
			t.Fatalf("call %d sent reasoning state %q", i+2, sent)
		}
	}
}
