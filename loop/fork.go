package loop

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// EditOp names one of the typed edits a fork may make to the history it copies. There is
// no free-form rewriting: each op changes one well-defined thing, and the result is
// checked (ValidateHistory) before anything is stored.
type EditOp string

const (
	// EditReplaceToolResult replaces the content of the tool result answering CallID.
	EditReplaceToolResult EditOp = "replace_tool_result"
	// EditLastUser replaces the text of the last user message, which must be the
	// history's last message (fork at it to edit an earlier turn).
	EditLastUser EditOp = "edit_last_user"
	// EditDropLastUser removes the last user message, which must be the history's last
	// message.
	EditDropLastUser EditOp = "drop_last_user"
	// EditDropLastTurn removes the last turn: the last user message and everything after it.
	EditDropLastTurn EditOp = "drop_last_turn"
)

// MaxEditContent bounds the text an edit puts into the history.
const MaxEditContent = 1 << 20

// Edit is one typed edit of a fork's history.
type Edit struct {
	Op      EditOp `json:"op"`
	CallID  string `json:"call_id,omitempty"` // replace_tool_result
	Content string `json:"content,omitempty"` // replace_tool_result, edit_last_user
}

// ErrInvalidEdit is wrapped by every refusal of ForkHistory: a fork point or an edit that
// would leave the conversation invalid, with the reason.
var ErrInvalidEdit = errors.New("invalid fork")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidEdit, fmt.Sprintf(format, args...))
}

// ForkHistory is the history of a fork of a session whose entries are these, taken at
// entry seq at: its message and compaction entries up to at (events are the original's
// record and stay there), with the edits applied in order, renumbered from 1, and
// checked with ValidateHistory. The entries are copies: the original's are not changed.
// Edits reach only the messages after the last compaction (what the model sees as they
// were stored).
func ForkHistory(entries []Entry, at int64, edits []Edit) ([]Entry, error) {
	last := int64(0)
	if n := len(entries); n > 0 {
		last = entries[n-1].Seq
	}
	if at < 1 || at > last {
		return nil, invalid("fork point %d is not an entry of the session (1..%d)", at, last)
	}
	var out []Entry
	for _, e := range entries {
		if e.Seq > at {
			break
		}
		if e.Kind == EntryMessage || e.Kind == EntryCompaction {
			c := e
			if c.Message != nil {
				m := *c.Message
				c.Message = &m
			}
			out = append(out, c)
		}
	}
	for i, ed := range edits {
		var err error
		if out, err = applyEdit(out, ed); err != nil {
			return nil, fmt.Errorf("edit %d (%s): %w", i+1, ed.Op, err)
		}
	}
	if len(out) == 0 {
		return nil, invalid("the fork would have no message")
	}
	for i := range out {
		out[i].Seq = int64(i + 1)
	}
	if err := ValidateHistory(out); err != nil {
		return nil, err
	}
	return out, nil
}

// editable is the index of the first entry an edit may touch: the one after the last
// compaction.
func editable(es []Entry) int {
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Kind == EntryCompaction {
			return i + 1
		}
	}
	return 0
}

func checkContent(s string) error {
	switch {
	case s == "":
		return invalid("content is empty")
	case len(s) > MaxEditContent:
		return invalid("content is %d bytes, more than %d", len(s), MaxEditContent)
	case !utf8.ValidString(s):
		return invalid("content is not valid UTF-8")
	}
	return nil
}

func applyEdit(es []Entry, ed Edit) ([]Entry, error) {
	from := editable(es)
	switch ed.Op {
	case EditReplaceToolResult:
		return replaceResult(es, ed, from)
	case EditLastUser, EditDropLastUser, EditDropLastTurn:
		return editLastTurn(es, ed, from)
	}
	return nil, invalid("unknown edit %q (replace_tool_result, edit_last_user, drop_last_user, drop_last_turn)", ed.Op)
}

// replaceResult is replace_tool_result: the latest result of the call, if the model
// still sees it (after the last compaction, from).
func replaceResult(es []Entry, ed Edit, from int) ([]Entry, error) {
	if err := checkContent(ed.Content); err != nil {
		return nil, err
	}
	for i := len(es) - 1; i >= 0; i-- {
		m := es[i].Message
		if es[i].Kind != EntryMessage || m.Role != RoleTool || m.ToolCallID != ed.CallID {
			continue
		}
		if i < from {
			return nil, invalid("the result of call %q was compacted: the model no longer sees it", ed.CallID)
		}
		m.Content = []Part{TextPart(ed.Content)}
		return es, nil
	}
	return nil, invalid("the fork has no tool result for call %q", ed.CallID)
}

// editLastTurn is edit_last_user, drop_last_user and drop_last_turn: the last user
// message after the last compaction (from).
func editLastTurn(es []Entry, ed Edit, from int) ([]Entry, error) {
	lastUser := -1
	for i := len(es) - 1; i >= from; i-- {
		if es[i].Kind == EntryMessage && es[i].Message.Role == RoleUser {
			lastUser = i
			break
		}
	}
	switch {
	case lastUser < 0:
		return nil, invalid("the fork has no user message after its last compaction")
	case ed.Op == EditDropLastTurn:
		return es[:lastUser], nil
	case lastUser != len(es)-1:
		return nil, invalid("the last user message is not the fork's last message: fork at its seq, or drop the last turn")
	case ed.Op == EditDropLastUser:
		return es[:lastUser], nil
	}
	if err := checkContent(ed.Content); err != nil {
		return nil, err
	}
	es[lastUser].Message.Content = []Part{TextPart(ed.Content)}
	return es, nil
}

// ValidateHistory checks that a history (message and compaction entries in order, as a
// run projects them) is one every provider accepts: a system message only first, every
// tool result answering a call of the assistant message before it, once, and every call
// answered before the conversation goes on. Only the last assistant message may have
// calls without results: a run resumed on the session executes them first (L14).
func ValidateHistory(es []Entry) error {
	var t transcript
	t.project(SessionHead{Transcript: es})
	var open map[string]bool // the calls of the last assistant message not yet answered
	var asked []string
	for i, m := range t.history {
		switch m.Role {
		case RoleSystem:
			return invalid("message %d is a system message after the conversation started", i+1)
		case RoleTool:
			if !open[m.ToolCallID] {
				return invalid("message %d is a result for call %q, which the assistant message before it did not make or was answered already", i+1, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		for _, id := range asked {
			if open[id] {
				return invalid("call %q has no result before message %d (%s)", id, i+1, m.Role)
			}
		}
		open, asked = nil, nil
		if m.Role == RoleAssistant && len(m.ToolCalls) > 0 {
			open = make(map[string]bool, len(m.ToolCalls))
			for _, c := range m.ToolCalls {
				open[c.ID] = true
				asked = append(asked, c.ID)
			}
		}
	}
	return nil
}

// Lineage is where a fork came from: its parent session, the parent's entry it was taken
// at, how many entries the fork started with (its own entries after Base are its own
// history), the edits made (their ops and call ids: their text is in the fork), who made
// it and when.
type Lineage struct {
	Parent  string    `json:"parent"`
	At      int64     `json:"at"`
	Base    int64     `json:"base"`
	Edits   []Edit    `json:"edits,omitempty"`
	By      string    `json:"by,omitempty"`
	Created time.Time `json:"created"`
}

// ForkRequest is a fork of Session at its entry At, with typed edits applied to the copy.
type ForkRequest struct {
	Session string `json:"-"` // the session forked (from the route or the command line)
	At      int64  `json:"at"`
	Edits   []Edit `json:"edits,omitempty"`
}

// ComparisonSide is one session of a comparison: what it holds after the point the two part at
// (From, an entry seq of its own), and what its runs there cost.
type ComparisonSide struct {
	Session  string    `json:"session"`
	From     int64     `json:"from"`
	Messages []Message `json:"messages"`
	Runs     int       `json:"runs"`
	Tokens   int       `json:"tokens"`
	CostUSD  float64   `json:"cost_usd"`
}

// Comparison is two related sessions (one a fork of the other, or both forks of one
// parent) from the point they part.
type Comparison struct {
	A ComparisonSide `json:"a"`
	B ComparisonSide `json:"b"`
}

// ErrUnrelated is Compare's answer for two sessions neither of which is a fork of the
// other, and that are not forks of one parent.
var ErrUnrelated = errors.New("neither session is a fork of the other, nor are they forks of one session")

// SideFrom is a session's side of a comparison: its messages and finished runs after from.
func SideFrom(id string, es []Entry, from int64) ComparisonSide {
	s := ComparisonSide{Session: id, From: from, Messages: []Message{}}
	for _, e := range es {
		switch {
		case e.Seq <= from:
		case e.Kind == EntryMessage && e.Message != nil:
			s.Messages = append(s.Messages, *e.Message)
		case e.Kind == EntryEvent && e.Event != nil && e.Event.Type == EventRunFinished:
			if f, ok := e.Event.Data.(*RunFinishedData); ok {
				s.Runs++
				s.Tokens += f.Usage.TotalTokens
				s.CostUSD += f.Usage.CostUSD
			}
		}
	}
	return s
}
