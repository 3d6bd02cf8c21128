package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/loop"
)

// dropEchoes removes from in.Messages the messages the session already stores, and
// refuses (an error, answered 400) those that contradict what it stores.
//
// AG-UI clients send their whole conversation with every run, and runInput takes the
// trailing user and tool messages as new input. After a client-tool interrupt that
// block also holds the client's copy of a result the server streamed (TOOL_CALL_RESULT
// of a call the host ran in the same answer): the official @ag-ui/client keeps it as a
// tool message and sends it back beside its own answer. Appended again, the model
// would see the call answered twice (assistant(c1,c2), tool c1, tool c2, tool c1), and
// several providers refuse such a history. So, against the stored session:
//   - a tool message whose call already has a stored result is dropped when its content
//     is the stored one, and refused when it differs (a call has one result, L16);
//   - a user message named by the id the server gave it (THREAD:entry:SEQ, from
//     MESSAGES_SNAPSHOT) is dropped when its text is the stored one, and refused when it
//     differs;
//   - a user message the snapshot would match to a stored one (same position among the
//     user messages, same text; ThreadSnapshot) is dropped only while that stored message
//     has no answer yet: the retry of a run that failed before the model answered. An
//     answered one is a new message with the same text (a client that sends only its new
//     message cannot be told from an echo otherwise).
//
// in.Messages must be runInput's output for ai: one message per trailing message of
// ai.Messages, in order.
func dropEchoes(ai RunAgentInput, in *loop.RunInput, entries []loop.Entry) error {
	st := readStored(entries)
	results, users, bySeq := st.results, st.users, st.bySeq
	off := len(ai.Messages) - len(in.Messages)
	nUser := 0 // the client's user messages before off
	for _, m := range ai.Messages[:off] {
		if m.Role == "user" {
			nUser++
		}
	}
	kept := in.Messages[:0:0]
	for i, m := range in.Messages {
		src := ai.Messages[off+i]
		where := fmt.Sprintf("messages[%d] (id %q)", off+i, src.ID)
		switch m.Role {
		case loop.RoleTool:
			if text, ok := results[m.ToolCallID]; ok {
				if text != m.Text() {
					return fmt.Errorf("%s: tool call %q already has a stored result, and this one differs from it (a call has one result; the stored one is %q)",
						where, m.ToolCallID, clip(text))
				}
				continue // the client's copy of the stored result
			}
		case loop.RoleUser:
			k := nUser
			nUser++
			if seq, ok := entryID(ai.ThreadID, src.ID); ok {
				if u := bySeq[seq]; u != nil {
					if u.text != m.Text() {
						return fmt.Errorf("%s: names the stored message %d, whose text differs (a stored message cannot be changed)", where, seq)
					}
					continue
				}
			}
			if k < len(users) && !users[k].answered && src.ID != "" && users[k].text == m.Text() {
				continue // sent again after a run that failed before the model answered
			}
		}
		kept = append(kept, m)
	}
	in.Messages = kept
	return nil
}

// storedSession is what dropEchoes compares the client's messages with.
type storedSession struct {
	// call id → the stored result of the newest call with that id: some models number
	// their calls call_0, call_1… in every answer, so an id names the latest call only.
	results map[string]string
	users   []*storedUser         // the stored user messages, in order
	bySeq   map[int64]*storedUser // the same, by entry seq
}

type storedUser struct {
	seq      int64
	text     string
	answered bool // an assistant message follows it
}

func readStored(entries []loop.Entry) storedSession {
	st := storedSession{results: map[string]string{}, bySeq: map[int64]*storedUser{}}
	for _, e := range entries {
		if e.Kind != loop.EntryMessage || e.Message == nil {
			continue
		}
		switch m := e.Message; m.Role {
		case loop.RoleTool:
			st.results[m.ToolCallID] = m.Text()
		case loop.RoleUser:
			u := &storedUser{seq: e.Seq, text: m.Text()}
			st.users, st.bySeq[e.Seq] = append(st.users, u), u
		case loop.RoleAssistant:
			for _, u := range st.users {
				u.answered = true
			}
			for _, c := range m.ToolCalls {
				delete(st.results, c.ID)
			}
		}
	}
	return st
}

// entryID reads the id ThreadSnapshot gives a stored user message: THREAD:entry:SEQ.
func entryID(thread, id string) (int64, bool) {
	rest, ok := strings.CutPrefix(id, thread+":entry:")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil
}

// clip shortens a text quoted in an error.
func clip(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

// suppliedResults are the call ids of the tool results in the run's input.
func suppliedResults(in loop.RunInput) map[string]bool {
	var out map[string]bool
	for _, m := range in.Messages {
		if m.Role == loop.RoleTool {
			if out == nil {
				out = map[string]bool{}
			}
			out[m.ToolCallID] = true
		}
	}
	return out
}
