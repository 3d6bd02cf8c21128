package loop

import (
	"fmt"
	"strings"
)

// Summarising compaction (seed 000, rule L11): when the model input passes
// Config.CompactAt tokens, before the model call the older part of the history (about
// half, cut before a user or assistant message so no tool result loses its call) is
// summarised by the run's model, quietly (no deltas), admitted by the budget and charged
// to the ledger like any model call, and the summary is stored as a compaction: this
// build, the rest of the run and the session's next runs start from it. A context
// overflow the provider reports takes the same path first; when summarising fails (the
// model errs, the budget is spent, the older part is too short) the strategies'
// compaction (DefaultContext's lossy one) is the fallback, as before.

// SummaryHeader opens the summary message a compaction stores.
const SummaryHeader = "[summary of the earlier conversation]"

const summarisePrompt = `You condense a conversation so that it can continue without its earlier part.
Write a summary of the conversation below for your own later use: the user's goals and
requests, facts and decisions, what tools returned that still matters, and what is still
open. Be concise; write only the summary.`

// maxSummaryInput bounds the transcript sent to be summarised, in bytes: the part being
// summarised is the older half of an input that was too large.
const maxSummaryInput = 400_000

// summariseOlder summarises the older half of the history into a stored compaction and
// reports whether it did. An error is one the run must end on (a store write failed).
func (r *run) summariseOlder() (bool, error) {
	h := r.transcript.history
	c := compactHalf(h)
	if c == nil {
		return false, nil
	}
	var b strings.Builder
	for _, m := range h[:c.Replace] {
		writeTranscriptLine(&b, m)
		if b.Len() > maxSummaryInput {
			break
		}
	}
	text := b.String()
	if len(text) > maxSummaryInput {
		text = text[len(text)-maxSummaryInput:] // the newer end of the older part matters more
	}
	msgs := []Message{{Role: RoleSystem, Content: []Part{TextPart(summarisePrompt)}}, UserMessage(text)}
	if err := r.checkBudget(msgs); err != nil {
		r.journal.emit(EventError, &ErrorData{Kind: "context", Message: "summarising compaction skipped: " + err.Error()})
		return false, nil
	}
	req := Request{Model: r.cfg.ModelName, Messages: msgs,
		Metadata: RequestMetadata{SessionID: r.in.SessionID, RunID: r.in.RunID, Extra: r.in.Metadata}}
	r.quiet = true
	resp, err := r.retrying(r.work, req)
	r.quiet = false
	if err != nil {
		r.journal.emit(EventError, &ErrorData{Kind: "context", Message: "summarising compaction failed: " + err.Error()})
		return false, nil
	}
	r.journal.emit(EventUsage, r.journal.pl.usage.put(resp.usage))
	summary := strings.TrimSpace(resp.message.Text())
	if summary == "" {
		return false, nil
	}
	c.Summary = []Message{UserMessage(SummaryHeader + "\n" + summary)}
	if err := r.journal.store(Entry{RunID: r.in.RunID, Time: r.cfg.Driver.Now(), Kind: EntryCompaction, Compaction: c}); err != nil {
		return false, err
	}
	r.transcript.applyCompaction(c, r.journal.seq)
	r.journal.emit(EventContextUpdate, &ContextUpdateData{Messages: len(r.transcript.history), Compacted: c.Replace, Summarised: true})
	return true, nil
}

// writeTranscriptLine renders a message for the summariser: role, text and tool calls.
func writeTranscriptLine(b *strings.Builder, m Message) {
	fmt.Fprintf(b, "%s: %s\n", m.Role, m.Text())
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(b, "  (called %s with %s)\n", tc.Name, tc.Arguments)
	}
}
