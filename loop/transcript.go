package loop

// transcript is the conversation a run works on: the stored system prompt and the
// history after it, with compactions applied and the entry seq behind each message. It
// owns the projection from stored entries and the question of which calls still lack a
// result; it never writes to the store.
type transcript struct {
	system      *Message  // the stored system prompt, if any
	history     []Message // conversation after the system prompt, compactions applied
	historySeqs []int64   // entry seq behind each history message
	seqBuf      [8]int64  // where historySeqs starts for a short session, in the run's allocation
}

// add appends a message stored at seq. The session's first message, when it is a system
// message, is the system prompt (L1).
// m is a pointer so that the caller's already stored copy is kept, not copied again.
func (r *transcript) add(m *Message, seq int64) {
	if m.Role == RoleSystem && r.system == nil && len(r.history) == 0 {
		r.system = m
		return
	}
	r.history = append(r.history, *m)
	r.historySeqs = append(r.historySeqs, seq)
}

// project rebuilds the system prompt and history from a session's head, applying its
// compactions. It returns the seq of the session's last entry.
func (r *transcript) project(head SessionHead) int64 {
	entries := head.Transcript
	// Room for what is stored and a step more, so a run's appends seldom grow them.
	n := len(entries)
	r.system, r.history, r.historySeqs = nil, make([]Message, 0, n+4), r.seqBuf[:0]
	if n+4 > len(r.seqBuf) {
		r.historySeqs = make([]int64, 0, n+4)
	}
	for _, e := range entries {
		switch e.Kind {
		case EntryMessage:
			if e.Message.Role == RoleSystem && r.system == nil && len(r.history) == 0 {
				m := *e.Message
				r.system = &m
				continue
			}
			r.history = append(r.history, *e.Message)
			r.historySeqs = append(r.historySeqs, e.Seq)
		case EntryCompaction:
			r.applyCompaction(e.Compaction, e.Seq)
		}
	}
	return head.LastSeq
}

func (r *transcript) applyCompaction(c *Compaction, seq int64) {
	n := min(max(c.Replace, 0), len(r.history))
	rest := r.history[n:]
	restSeqs := r.historySeqs[n:]
	h := make([]Message, 0, len(c.Summary)+len(rest))
	s := make([]int64, 0, cap(h))
	for _, m := range c.Summary {
		h = append(h, m)
		s = append(s, seq)
	}
	r.history = append(h, rest...)
	r.historySeqs = append(s, restSeqs...)
}

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
