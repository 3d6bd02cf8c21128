package loop

// transcript is the conversation a run works on: the stored system prompt and the
// history after it, with compactions applied and the entry seq behind each message. It
// owns the projection from stored entries and the question of which calls still lack a
// result; it never writes to the store.
type transcript struct {
	system      *Message  // the stored system prompt, if any: all[0]
	history     []Message // conversation after the system prompt, compactions applied: all[len(all)-len(history):]
	historySeqs []int64   // entry seq behind each history message
	seqBuf      [8]int64  // where historySeqs starts for a short session, in the run's allocation
	// all is the system prompt (when there is one) and the history in one array, so a
	// model call's input is a slice of it, not a copy (run.baseMessages). It only grows
	// by append: a slice of it handed out (capped at its length) never sees a later
	// message, and nothing is written into what a slice handed out covers; a compaction
	// makes a new array.
	all []Message
}

// add appends a message stored at seq. The session's first message, when it is a system
// message, is the system prompt (L1).
func (r *transcript) add(m *Message, seq int64) {
	if m.Role == RoleSystem && r.system == nil && len(r.history) == 0 {
		r.all = append(r.all[:0], *m) // the history is empty: nothing handed out covers all[0]
		r.system, r.history = &r.all[0], r.all[1:]
		return
	}
	r.all = append(r.all, *m)
	r.history = r.all[len(r.all)-len(r.history)-1:]
	r.historySeqs = append(r.historySeqs, seq)
}

// project rebuilds the system prompt and history from a session's head, applying its
// compactions. It returns the seq of the session's last entry.
func (r *transcript) project(head SessionHead) int64 {
	entries := head.Transcript
	// Room for what is stored and a step more (the system prompt, the input, a tool
	// round and the answer), so a run's appends seldom grow them.
	n := len(entries)
	r.system, r.historySeqs = nil, r.seqBuf[:0]
	if n+4 > len(r.seqBuf) {
		r.historySeqs = make([]int64, 0, n+4)
	}
	if len(head.Messages) == n && n > 0 {
		return r.adopt(head)
	}
	r.all = make([]Message, 0, n+6)
	r.history = r.all
	for _, e := range entries {
		switch e.Kind {
		case EntryMessage:
			if e.Message.Role == RoleSystem && r.system == nil && len(r.history) == 0 {
				r.all = append(r.all, *e.Message)
				r.system, r.history = &r.all[0], r.all[1:]
				continue
			}
			r.all = append(r.all, *e.Message)
			r.history = r.all[len(r.all)-len(r.history)-1:]
			r.historySeqs = append(r.historySeqs, e.Seq)
		case EntryCompaction:
			r.applyCompaction(e.Compaction, e.Seq)
		}
	}
	return head.LastSeq
}

// adopt is project of a head whose messages the store gave in one array of its own
// (SessionHead.Messages, no compaction among them): all is that array, its room past
// its length the run's to append to, and nothing is copied.
func (r *transcript) adopt(head SessionHead) int64 {
	r.all, r.history = head.Messages, head.Messages
	if r.all[0].Role == RoleSystem {
		r.system, r.history = &r.all[0], r.all[1:]
	}
	for _, e := range head.Transcript[len(head.Transcript)-len(r.history):] {
		r.historySeqs = append(r.historySeqs, e.Seq)
	}
	return head.LastSeq
}

func (r *transcript) applyCompaction(c *Compaction, seq int64) {
	n := min(max(c.Replace, 0), len(r.history))
	rest := r.history[n:]
	restSeqs := r.historySeqs[n:]
	sys := len(r.all) - len(r.history) // 1 with a system prompt
	all := make([]Message, 0, sys+len(c.Summary)+len(rest)+4)
	all = append(all, r.all[:sys]...)
	s := make([]int64, 0, len(c.Summary)+len(rest)+4)
	for _, m := range c.Summary {
		all = append(all, m)
		s = append(s, seq)
	}
	r.all = append(all, rest...)
	r.history = r.all[sys:]
	if sys > 0 {
		r.system = &r.all[0]
	}
	r.historySeqs = append(s, restSeqs...)
}

// messages is the system prompt and the history, shared: capped at its length, so an
// append to it makes a copy; the caller must not write into it.
func (r *transcript) messages() []Message { return r.all[:len(r.all):len(r.all)] }

// shared is the history as handed to hooks and strategies: capped the same way.
func (r *transcript) shared() []Message { return r.history[:len(r.history):len(r.history)] }

// unresolvedCalls lists the calls of the last assistant message that have no stored
// result: what a crashed or aborted run left to do.
func (r *transcript) unresolvedCalls() []ToolCall {
	k := r.resultsAfterLastAssistant()
	i := len(r.history) - 1 - k
	if i < 0 || r.history[i].Role != RoleAssistant || len(r.history[i].ToolCalls) == 0 {
		return nil
	}
	done := make(map[string]bool, k)
	for _, m := range r.history[i+1:] {
		done[m.ToolCallID] = true
	}
	var out []ToolCall
	for _, c := range r.history[i].ToolCalls {
		if !done[c.ID] {
			out = append(out, c)
		}
	}
	return out
}

func (r *transcript) resultsAfterLastAssistant() int {
	k := 0
	for i := len(r.history) - 1; i >= 0 && r.history[i].Role == RoleTool; i-- {
		k++
	}
	return k
}
