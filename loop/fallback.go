package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Tool fallback (Config.ToolFallbacks; a tool's fallback = ["other_tool"] in the
// manifest). When a call fails — the tool returned an error, panicked, timed out or was
// busy — rather than answering with an error result of its own (IsError: the tool's
// word, which a fallback would not improve), the tools its fallback list names are
// called in turn, with the same arguments or, when the fallback has an argument
// mapping, with the arguments the mapping makes of them, until one does not fail. Each
// fallback call is a call of its own through the tool pipeline (rule L22): announced
// (its tool_call's fallback_for names the failed call's id), cap-checked, admitted
// (offered, argument schema, tool_args guardrails, permission, approval), stored,
// invoked and settled with its own tool_result, under the id CALLID~TOOL. The failed
// call then settles with the fallback's result, its tool_result naming the tool
// (fallback), and that is the result the model or the plan step gets under the
// original id. A fallback that is refused or fails too leaves the next one to try, and
// when none is left the original failure stands. A fallback whose approval waits for a
// human (ErrApprovalPending) is not taken: the original failure stands. Fallbacks do
// not chain (a fallback's own fallbacks are not tried).

// ToolFallback is one entry of a tool's fallback list: the tool to call, and how its
// arguments are made from the failed call's.
type ToolFallback struct {
	Tool string
	// Arguments maps each of the fallback's argument names to the failed call's
	// argument whose value it takes (top-level names of a JSON object). Nil: the
	// fallback gets the failed call's arguments unchanged. A name the failed call did
	// not send is left out; arguments the mapping does not name are not passed on.
	Arguments map[string]string
}

// tryFallbacks replaces a failed call's result with its first fallback's that does not
// fail.
func (r *run) tryFallbacks(pc *pendingCall) {
	if !pc.failed || pc.fallbackFor != "" { // failed: the tool ran and failed, or its runtime did
		return
	}
	list := r.cfg.ToolFallbacks[pc.call.Name]
	if pc.group != "" { // a group's call: its other members stand in (toolgroup.go)
		list = make([]ToolFallback, len(pc.members))
		for i, m := range pc.members {
			list[i] = ToolFallback{Tool: m}
		}
	}
	for _, fb := range list {
		fc := ToolCall{ID: pc.call.ID + "~" + fb.Tool, Name: fb.Tool, Arguments: pc.call.Arguments}
		args, err := mapArguments(pc.args, fb.Arguments)
		if err == nil {
			fc.Arguments = args
		}
		if res, ok := r.fallbackCall(fc, pc, err); ok {
			pc.result, pc.fallback = res, fb.Tool
			return
		}
	}
}

// mapArguments makes a fallback's arguments from the failed call's args (as the tool
// got them) with mapping m: fallback name → failed call's name. A nil m keeps args.
func mapArguments(args string, m map[string]string) (string, error) {
	if m == nil {
		return args, nil
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &in); err != nil || in == nil {
		return "", errors.New("the arguments are not a JSON object to map")
	}
	names := make([]string, 0, len(m))
	for to := range m {
		names = append(names, to)
	}
	slices.Sort(names)
	out := make(map[string]json.RawMessage, len(m))
	for _, to := range names {
		if v, ok := in[m[to]]; ok {
			out[to] = v
		}
	}
	b, err := json.Marshal(out) // keys sorted: the same call maps to the same text
	return string(b), err
}

// fallbackCall takes fc through the pipeline for the failed call orig and reports its
// result and whether the tool ran without failing. mapErr, when set, is why fc's
// arguments could not be made: the call is announced and refused with it.
func (r *run) fallbackCall(fc ToolCall, orig *pendingCall, mapErr error) (ToolResult, bool) {
	r.journal.pin()
	r.journal.emit(EventStepStart, r.journal.pl.stepStart.put(StepStartData{ID: fc.ID, Name: fc.Name}))
	r.journal.emit(EventToolCall, r.journal.pl.toolCall.put(ToolCallData{ID: fc.ID, Name: fc.Name, Arguments: eventArgs(fc.Arguments), FallbackFor: orig.call.ID}))
	r.journal.unpin()
	if mapErr != nil {
		r.settle(&pendingCall{call: fc, fallbackFor: orig.call.ID, result: ErrorResult(fmt.Sprintf("Error: fallback not taken: %v", mapErr))})
		return ToolResult{}, false
	}
	if at, reason := r.checkCaps([]ToolCall{fc}); at == 0 {
		r.settle(&pendingCall{call: fc, fallbackFor: orig.call.ID, result: ErrorResult(fmt.Sprintf("Error: tool call not executed: %s", reason))})
		return ToolResult{}, false
	}
	fpc, err := r.admitInto(&pendingCall{group: orig.group}, fc)
	if err != nil { // a store failure (the next write reports it) or an approval that waits
		r.settle(&pendingCall{call: fc, fallbackFor: orig.call.ID, result: ErrorResult(fmt.Sprintf("Error: fallback not taken: %v", err))})
		return ToolResult{}, false
	}
	fpc.fallbackFor, fpc.timeout = orig.call.ID, orig.timeout
	if fpc.tool != nil {
		if err := r.journal.flush(); err != nil {
			return ToolResult{}, false
		}
		r.invoke(fpc)
		if fpc.pending {
			fpc.result = ErrorResult("Error: fallback not taken: it waits for a human")
			fpc.failed = true
		}
	}
	res := r.settle(fpc)
	return res, fpc.tool != nil && !fpc.failed
}
