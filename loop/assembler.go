package loop

import (
	"cmp"
	"fmt"
	"slices"
)

// indexedCall is a call being assembled and the index its fragments carry.
type indexedCall struct {
	index int
	call  ToolCall
}

// assembler builds one assistant message from a model call's deltas. It owns the
// replay rule of one stream (L14: a delta whose seq was already read is dropped) and
// knows nothing about events or the store: add reports whether a delta is new so the
// caller decides what to emit.
type assembler struct {
	callIndex       int
	text, reasoning []byte
	state           string        // DeltaReasoningState
	calls           []indexedCall // few per answer: a slice beats a map (BenchmarkStep)
	usage           Usage
	stop            string
	read            int // highest seq read from this stream
}

func newAssembler(callIndex int) *assembler {
	return &assembler{callIndex: callIndex}
}

// add folds d into the message. It reports false for a replayed delta, which changes
// nothing.
func (a *assembler) add(d Delta) bool {
	if d.Seq != 0 {
		if d.Seq <= a.read {
			return false
		}
		a.read = d.Seq
	}
	switch d.Kind {
	case DeltaText:
		a.text = append(a.text, d.Text...)
	case DeltaReasoning:
		a.reasoning = append(a.reasoning, d.Text...)
	case DeltaToolCall:
		if tc := d.ToolCall; tc != nil {
			a.addCall(tc)
		}
	case DeltaUsage:
		if d.Usage != nil {
			a.usage = *d.Usage
		}
	case DeltaFinish:
		a.stop = d.StopReason
	case DeltaReasoningState:
		a.state = d.Text
	}
	return true
}

// message returns the assembled message (calls in index order, missing ids filled in),
// its usage and normalised stop reason, or an error for an empty answer.
func (a *assembler) message() (Message, Usage, StopReason, error) {
	msg := Message{Role: RoleAssistant, Reasoning: string(a.reasoning), ReasoningState: a.state}
	if len(a.text) > 0 {
		msg.Content = []Part{TextPart(string(a.text))}
	}
	if len(a.calls) > 0 {
		slices.SortStableFunc(a.calls, func(x, y indexedCall) int { return cmp.Compare(x.index, y.index) })
		msg.ToolCalls = make([]ToolCall, 0, len(a.calls))
		for n, ic := range a.calls {
			c := ic.call
			if c.ID == "" {
				c.ID = fmt.Sprintf("call_%d_%d", a.callIndex, n)
			}
			msg.ToolCalls = append(msg.ToolCalls, c)
		}
	}
	if len(msg.Content) == 0 && len(msg.ToolCalls) == 0 {
		return Message{}, Usage{}, "", &ModelError{Kind: KindProvider, Retryable: true,
			Message: "model returned an empty response (no text and no tool calls)"}
	}
	return msg, a.usage, normaliseStop(a.stop, len(msg.ToolCalls) > 0), nil
}

// addCall adds a fragment to the call it continues (by index), or starts that call.
func (a *assembler) addCall(tc *ToolCallDelta) {
	var c *ToolCall
	for i := range a.calls {
		if a.calls[i].index == tc.Index {
			c = &a.calls[i].call
			break
		}
	}
	if c == nil {
		a.calls = append(a.calls, indexedCall{index: tc.Index})
		c = &a.calls[len(a.calls)-1].call
	}
	if tc.ID != "" {
		c.ID = tc.ID
	}
	if tc.Name != "" {
		c.Name = tc.Name
	}
	c.Arguments += tc.Arguments
}
