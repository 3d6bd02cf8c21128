package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// buildContext runs the strategy chain over the history (L11) and returns the model
// input. A compaction a strategy proposes is stored before the next strategy runs, so
// later builds, in this run and the next, start from it.
func (r *run) buildContext(overflow bool) ([]Message, error) {
	summarise := r.cfg.CompactAt > 0
	if overflow && summarise { // the provider said too long: summarise first (compact.go)
		done, err := r.summariseOlder()
		if err != nil {
			return nil, err
		}
		overflow, summarise = !done, false // one summary per build
	}
	msgs, err := r.runStrategies(overflow)
	if err != nil || !summarise || EstimateTokens(msgs) <= r.cfg.CompactAt {
		return msgs, err
	}
	done, err := r.summariseOlder()
	if err != nil || !done {
		return msgs, err
	}
	return r.runStrategies(false)
}

// runStrategies is one pass of the strategy chain.
func (r *run) runStrategies(overflow bool) ([]Message, error) {
	msgs := r.baseMessages()
	compacted := 0
	for _, s := range r.cfg.Context {
		in := ContextInput{History: r.transcript.shared(), Messages: msgs, Budget: r.cfg.ContextBudget, Overflow: overflow,
			State: r.in.State, Context: r.in.ClientContext, Tools: r.offerWithCache(r.offered), Hints: r.in.RuntimeHints}
		out, err := safeBuild(r.ctx, s, in)
		if err != nil {
			r.journal.emit(EventError, &ErrorData{Kind: "context", Message: fmt.Sprintf("context strategy %q: %v", s.Name(), err)})
			continue // a broken strategy is skipped, not fatal
		}
		if c := out.Compact; c != nil && c.Replace > 0 {
			if c.Replace > len(r.transcript.history) {
				r.journal.emit(EventError, &ErrorData{Kind: "context", Message: fmt.Sprintf(
					"context strategy %q: compaction replaces %d messages, history has %d", s.Name(), c.Replace, len(r.transcript.history))})
				continue
			}
			if err := r.journal.store(Entry{RunID: r.in.RunID, Time: r.cfg.Driver.Now(), Kind: EntryCompaction, Compaction: c}); err != nil {
				return nil, err
			}
			r.transcript.applyCompaction(c, r.journal.seq)
			compacted += c.Replace
		}
		if out.Messages != nil {
			msgs = out.Messages
		}
		msgs = r.appendFromStrategy(s.Name(), out.Append, msgs)
		r.setState(s.Name(), out.State)
	}
	if !r.outputsTrimmed && hasTrimmed(msgs) {
		r.outputsTrimmed = true // from now on the run offers read_tool_output (toolcache.go)
	}
	if overflow || compacted > 0 {
		r.journal.emit(EventContextUpdate, &ContextUpdateData{Messages: len(msgs), EstimatedTokens: EstimateTokens(msgs),
			Overflow: overflow, Compacted: compacted})
	}
	return msgs, nil
}

// setState takes a strategy's new client state: valid JSON that differs from the
// current state replaces it and is reported (a state event); anything else is an error
// event and the state stays.
func (r *run) setState(strategy string, state json.RawMessage) {
	if state == nil {
		return
	}
	if !json.Valid(state) {
		r.journal.emit(EventError, &ErrorData{Kind: "context", Message: fmt.Sprintf("context strategy %q: state is not JSON", strategy)})
		return
	}
	if bytes.Equal(bytes.TrimSpace(state), bytes.TrimSpace(r.in.State)) {
		return
	}
	r.in.State = append(json.RawMessage(nil), state...)
	r.journal.emit(EventState, &StateData{State: r.in.State})
}

// baseMessages is the system prompt (or the run's override) followed by the history:
// the transcript's own array, shared (a strategy or model that wants it different makes
// a copy), so a model call on a long session copies none of it.
func (r *run) baseMessages() []Message {
	if r.in.SystemPromptOverride == "" {
		return r.transcript.messages()
	}
	out := make([]Message, 0, len(r.transcript.history)+1)
	out = append(out, Message{Role: RoleSystem, Content: []Part{TextPart(r.in.SystemPromptOverride)}})
	return append(out, r.transcript.history...)
}

func safeBuild(ctx context.Context, s ContextStrategy, in ContextInput) (out ContextOutput, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	return s.Build(ctx, in)
}

// EstimateTokens is a cheap token estimate (four bytes a token plus a few per message),
// good enough to compare against a budget; adapters report the real counts.
func EstimateTokens(msgs []Message) int {
	n := 0
	for i := range msgs { // by index: a Message or Part copied per element was most of the cost
		m := &msgs[i]
		n += 4 + len(m.Reasoning)/4
		for j := range m.Content {
			p := &m.Content[j]
			n += len(p.Text)/4 + mediaTokens(p)
		}
		for j := range m.ToolCalls {
			n += (len(m.ToolCalls[j].Name) + len(m.ToolCalls[j].Arguments)) / 4
		}
	}
	return n
}

// DefaultContext is the default strategy (seed 000's toolOutputCache): the full history,
// with tool outputs older than the latest tool round cut to MaxToolChars. On overflow it
// compacts: the older half of the history is replaced by the first user message and a
// note saying how many messages were dropped, cut where no tool result loses its call.
type DefaultContext struct {
	MaxToolChars int // default 2000
}

func (DefaultContext) Name() string { return "default" }

// Build implements ContextStrategy.
func (d DefaultContext) Build(_ context.Context, in ContextInput) (ContextOutput, error) {
	limit := d.MaxToolChars
	if limit <= 0 {
		limit = 2000
	}
	msgs := withClientContext(in.Messages, in.Context)
	if in.Overflow {
		if c := compactHalf(in.History); c != nil {
			return ContextOutput{Messages: fitBudget(trimToolOutputs(applyToMessages(msgs, in.History, c), limit), in.Budget), Compact: c}, nil
		}
	}
	return ContextOutput{Messages: fitBudget(trimToolOutputs(msgs, limit), in.Budget)}, nil
}

// ClientContextHeader opens the block DefaultContext adds to the system message for
// the client's context items. A strategy earlier in the chain that has placed the items
// itself includes this line, and DefaultContext adds nothing.
const ClientContextHeader = "Context from the client:"

// withClientContext returns msgs with the client's context items at the end of the
// system message (one is added first when there is none). msgs is not changed.
func withClientContext(msgs []Message, items []ContextItem) []Message {
	if len(items) == 0 {
		return msgs
	}
	for _, m := range msgs {
		if m.Role == RoleSystem && strings.Contains(m.Text(), ClientContextHeader) {
			return msgs
		}
	}
	var b strings.Builder
	b.WriteString(ClientContextHeader)
	for _, it := range items {
		b.WriteString("\n- ")
		if it.Description != "" {
			b.WriteString(it.Description)
			b.WriteString(": ")
		}
		b.WriteString(it.Value)
	}
	out := make([]Message, 0, len(msgs)+1)
	if len(msgs) > 0 && msgs[0].Role == RoleSystem {
		sys := msgs[0]
		text := sys.Text()
		sys.Content = []Part{TextPart(text + "\n\n" + b.String())}
		return append(append(out, sys), msgs[1:]...)
	}
	out = append(out, Message{Role: RoleSystem, Content: []Part{TextPart(b.String())}})
	return append(out, msgs...)
}

// fitBudget makes the model input fit budget tokens (L20) without storing anything: the
// oldest messages after the system prompt go first, cut before a user or assistant
// message so no tool result loses its call, and a note says how many went. When the
// newest turn alone is still over, every text is cut to an equal share of the budget.
func fitBudget(msgs []Message, budget int) []Message {
	if budget <= 0 || EstimateTokens(msgs) <= budget {
		return msgs
	}
	head := 0
	if len(msgs) > 0 && msgs[0].Role == RoleSystem {
		head = 1
	}
	// suffix[i] is the estimate of msgs[i:].
	suffix := make([]int, len(msgs)+1)
	for i := len(msgs) - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + EstimateTokens(msgs[i:i+1])
	}
	cut := trimPoint(msgs, head, suffix, budget)
	out := msgs
	if cut > head {
		out = make([]Message, 0, head+1+len(msgs)-cut)
		out = append(out, msgs[:head]...)
		out = append(out, UserMessage(fmt.Sprintf("[context trimmed: %d earlier messages were left out to fit the context budget]", cut-head)))
		out = append(out, msgs[cut:]...)
	}
	if EstimateTokens(out) <= budget {
		return out
	}
	share := max((budget/len(out)-6)*4, 0) // bytes per message: 4 tokens of overhead, 2 for the mark
	cutOut := make([]Message, len(out))
	for i, m := range out {
		parts := make([]Part, len(m.Content))
		for j, p := range m.Content {
			if len(p.Text) > share {
				c := share
				for c > 0 && !utf8.RuneStart(p.Text[c]) {
					c--
				}
				p.Text = p.Text[:c] + "[…]"
			}
			parts[j] = p
		}
		m.Content = parts
		cutOut[i] = m
	}
	return cutOut
}

// compactHalf proposes replacing about half the history, cutting before a user or
// assistant message so that tool results stay with their call. Nil when nothing can go.
func compactHalf(h []Message) *Compaction {
	cut := -1
	for i := len(h) / 2; i < len(h); i++ {
		if i > 0 && h[i].Role != RoleTool {
			cut = i
			break
		}
	}
	if cut <= 1 {
		return nil
	}
	summary := []Message{}
	first := -1
	for i := 0; i < cut; i++ {
		if h[i].Role == RoleUser {
			first = i
			break
		}
	}
	dropped := cut
	if first >= 0 {
		summary = append(summary, h[first])
		dropped--
	}
	summary = append(summary, UserMessage(fmt.Sprintf(
		"[context compacted: %d earlier messages were removed to fit the model's context window]", dropped)))
	return &Compaction{Replace: cut, Summary: summary}
}

// applyToMessages rewrites a model input built from history as if c had been applied.
func applyToMessages(msgs, history []Message, c *Compaction) []Message {
	head := len(msgs) - len(history) // the system prompt, if any
	if head < 0 {
		head = 0
	}
	out := make([]Message, 0, len(msgs)-c.Replace+len(c.Summary))
	out = append(out, msgs[:head]...)
	out = append(out, c.Summary...)
	return append(out, msgs[head+c.Replace:]...)
}

// trimToolOutputs cuts tool messages before the last assistant message to limit bytes
// (on a rune boundary), copying only what changes.
func trimToolOutputs(msgs []Message, limit int) []Message {
	lastAssistant := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleAssistant {
			lastAssistant = i
			break
		}
	}
	var out []Message
	for i := 0; i < lastAssistant; i++ {
		if msgs[i].Role != RoleTool || len(partsText(msgs[i].Content)) <= limit {
			continue
		}
		m := msgs[i]
		if out == nil {
			out = append([]Message(nil), msgs...)
		}
		text := m.Text()
		cut := limit
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		m.Content = []Part{TextPart(text[:cut] + "\n" + trimNote(m.ToolCallID, len(text)-cut, cut))}
		out[i] = m
	}
	if out == nil {
		return msgs
	}
	return out
}

// trimPoint is where fitBudget cuts the history (L20): the first user or assistant
// message after the system prompt from which the rest fits with the prompt and the
// note, or the last such message when nothing fits; -1 when there is none.
func trimPoint(msgs []Message, head int, suffix []int, budget int) int {
	fixed := suffix[0] - suffix[head] + 12 // the system prompt and the note
	cut := -1
	for i := head + 1; i < len(msgs); i++ {
		if msgs[i].Role == RoleTool {
			continue
		}
		cut = i
		if fixed+suffix[i] <= budget {
			break
		}
	}
	return cut
}
