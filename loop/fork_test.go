package loop

import (
	"errors"
	"strings"
	"testing"
)

// forkSession is a stored session: system, user, assistant calling c1 and c2, their
// results, the final answer, each message between events as a run stores them.
func forkSession() []Entry {
	msgs := []Message{
		{Role: RoleSystem, Content: []Part{TextPart("be brief")}},
		UserMessage("what is 6*7 and 1+1?"),
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "calc"}, {ID: "c2", Name: "calc"}}},
		{Role: RoleTool, ToolCallID: "c1", Name: "calc", Content: []Part{TextPart("42")}},
		{Role: RoleTool, ToolCallID: "c2", Name: "calc", Content: []Part{TextPart("2")}},
		{Role: RoleAssistant, Content: []Part{TextPart("42 and 2")}},
		UserMessage("thanks"),
	}
	var es []Entry
	for _, m := range msgs {
		es = append(es, Entry{Seq: int64(len(es) + 1), RunID: "r1", Kind: EntryEvent, Event: &Event{Seq: int64(len(es) + 1), Type: EventStatus}})
		m := m
		es = append(es, Entry{Seq: int64(len(es) + 1), RunID: "r1", Kind: EntryMessage, Message: &m})
	}
	return es
}

func forkTexts(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, string(e.Message.Role)+":"+e.Message.Text())
	}
	return out
}

func TestForkHistoryCopiesMessagesUpToTheForkPointRenumberedAndLeavesTheOriginal(t *testing.T) {
	orig := forkSession()
	// seq 8 is c1's result: the fork ends there, with c2 still to run (L14).
	got, err := ForkHistory(orig, 8, []Edit{{Op: EditReplaceToolResult, CallID: "c1", Content: "41"}})
	if err != nil {
		t.Fatal(err)
	}
	if w := "system:be brief|user:what is 6*7 and 1+1?|assistant:|tool:41"; strings.Join(forkTexts(got), "|") != w {
		t.Fatalf("fork %q, want %q", forkTexts(got), w)
	}
	for i, e := range got {
		if e.Seq != int64(i+1) || e.RunID != "r1" {
			t.Fatalf("entry %d: seq %d run %q", i, e.Seq, e.RunID)
		}
	}
	if orig[7].Message.Text() != "42" {
		t.Fatalf("the original's result changed to %q", orig[7].Message.Text())
	}
}

func TestForkEditsOfTheLastTurn(t *testing.T) {
	orig := forkSession()
	for _, c := range []struct {
		at    int64
		edits []Edit
		want  string
	}{
		{14, []Edit{{Op: EditLastUser, Content: "thank you"}}, "system:be brief|user:what is 6*7 and 1+1?|assistant:|tool:42|tool:2|assistant:42 and 2|user:thank you"},
		{14, []Edit{{Op: EditDropLastUser}}, "system:be brief|user:what is 6*7 and 1+1?|assistant:|tool:42|tool:2|assistant:42 and 2"},
		{12, []Edit{{Op: EditDropLastTurn}}, "system:be brief"},
		{14, []Edit{{Op: EditDropLastTurn}, {Op: EditReplaceToolResult, CallID: "c2", Content: "3"}}, "system:be brief|user:what is 6*7 and 1+1?|assistant:|tool:42|tool:3|assistant:42 and 2"},
	} {
		got, err := ForkHistory(orig, c.at, c.edits)
		if err != nil {
			t.Fatalf("%v: %v", c.edits, err)
		}
		if s := strings.Join(forkTexts(got), "|"); s != c.want {
			t.Fatalf("%v:\n got %s\nwant %s", c.edits, s, c.want)
		}
	}
}

func TestForkRefusesAnInvalidForkPointOrEditWithTheReason(t *testing.T) {
	orig := forkSession()
	for _, c := range []struct {
		at    int64
		edits []Edit
		want  string
	}{
		{0, nil, "fork point 0 is not an entry of the session (1..14)"},
		{15, nil, "fork point 15 is not an entry of the session"},
		{8, []Edit{{Op: EditReplaceToolResult, CallID: "c2", Content: "3"}}, `no tool result for call "c2"`},
		{8, []Edit{{Op: EditReplaceToolResult, CallID: "c1"}}, "content is empty"},
		{8, []Edit{{Op: EditReplaceToolResult, CallID: "c1", Content: "\xff"}}, "not valid UTF-8"},
		{8, []Edit{{Op: EditReplaceToolResult, CallID: "c1", Content: strings.Repeat("x", MaxEditContent+1)}}, "more than"},
		{12, []Edit{{Op: EditLastUser, Content: "x"}}, "the last user message is not the fork's last message"},
		{2, []Edit{{Op: EditDropLastUser}}, "no user message"},
		{4, []Edit{{Op: EditDropLastTurn}, {Op: EditDropLastTurn}}, "edit 2 (drop_last_turn)"},
		{4, []Edit{{Op: "rewrite"}}, `unknown edit "rewrite"`},
	} {
		_, err := ForkHistory(orig, c.at, c.edits)
		if !errors.Is(err, ErrInvalidEdit) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("at %d %v: %v, want %q", c.at, c.edits, err, c.want)
		}
	}
	if _, err := ForkHistory(orig[2:4], 4, []Edit{{Op: EditDropLastTurn}}); err == nil || !strings.Contains(err.Error(), "no message") {
		t.Fatalf("a fork left empty: %v", err)
	}
}

func TestValidateHistoryKeepsEveryCallAnsweredBeforeTheConversationGoesOn(t *testing.T) {
	msg := func(m Message) Entry { return Entry{Kind: EntryMessage, Message: &m} }
	call := Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1"}, {ID: "c2"}}}
	res := func(id string) Entry { return msg(Message{Role: RoleTool, ToolCallID: id}) }
	for _, c := range []struct {
		es   []Entry
		want string
	}{
		{[]Entry{msg(UserMessage("q")), msg(call), res("c1"), msg(UserMessage("more"))}, `call "c2" has no result before message 4 (user)`},
		{[]Entry{msg(UserMessage("q")), msg(call), res("c1"), res("c1")}, `result for call "c1"`},
		{[]Entry{msg(UserMessage("q")), res("c9")}, `result for call "c9"`},
		{[]Entry{msg(UserMessage("q")), msg(Message{Role: RoleSystem})}, "system message after"},
		{[]Entry{msg(UserMessage("q")), msg(call), res("c2")}, ""}, // c1 left to the resumed run (L14)
		{[]Entry{msg(UserMessage("q")), msg(call), res("c2"), res("c1"), msg(Message{Role: RoleAssistant})}, ""},
	} {
		err := ValidateHistory(c.es)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Fatalf("%s: %v", forkTexts(c.es), err)
		}
	}
}
