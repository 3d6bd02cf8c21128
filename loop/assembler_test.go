package loop

import (
	"errors"
	"testing"
)

func TestAssembler_JoinsFragmentsDropsReplaysAndNamesCalls(t *testing.T) {
	a := newAssembler(3)
	ds := []Delta{
		{Seq: 1, Kind: DeltaReasoning, Text: "think"},
		{Seq: 2, Kind: DeltaText, Text: "Hel"},
		{Seq: 2, Kind: DeltaText, Text: "Hel"}, // a replay: dropped
		{Seq: 3, Kind: DeltaText, Text: "lo"},
		{Seq: 4, Kind: DeltaToolCall, ToolCall: &ToolCallDelta{Index: 1, Name: "b", Arguments: `{"x"`}},
		{Seq: 5, Kind: DeltaToolCall, ToolCall: &ToolCallDelta{Index: 0, ID: "a1", Name: "a", Arguments: `{}`}},
		{Seq: 6, Kind: DeltaToolCall, ToolCall: &ToolCallDelta{Index: 1, Arguments: `:1}`}},
		{Seq: 7, Kind: DeltaToolCall}, // no payload: ignored
		{Seq: 8, Kind: DeltaUsage, Usage: &Usage{PromptTokens: 3, CompletionTokens: 4}},
		{Seq: 9, Kind: DeltaFinish, StopReason: "max_tokens"},
	}
	var fresh []bool
	for _, d := range ds {
		fresh = append(fresh, a.add(d))
	}
	equal(t, "fresh", fresh, []bool{true, true, false, true, true, true, true, true, true, true})
	msg, u, stop, err := a.message()
	if err != nil || msg.Text() != "Hello" || msg.Reasoning != "think" || u.CompletionTokens != 4 || stop != StopMaxTokens {
		t.Fatalf("msg %+v usage %+v stop %q err %v", msg, u, stop, err)
	}
	equal(t, "calls", msg.ToolCalls, []ToolCall{{ID: "a1", Name: "a", Arguments: "{}"}, {ID: "call_3_1", Name: "b", Arguments: `{"x":1}`}})
}

func TestAssembler_EmptyAnswerIsARetryableProviderError(t *testing.T) {
	a := newAssembler(1)
	a.add(Delta{Kind: DeltaFinish})
	_, _, _, err := a.message()
	var me *ModelError
	if !errors.As(err, &me) || me.Kind != KindProvider || !me.Retryable {
		t.Fatalf("err %v", err)
	}
}
