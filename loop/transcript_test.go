package loop

import "testing"

func TestTranscript_ProjectsCompactionsAndFindsUnresolvedCalls(t *testing.T) {
	sys := Message{Role: RoleSystem, Content: []Part{TextPart("sys")}}
	u1, u2 := UserMessage("one"), UserMessage("two")
	asst := Message{Role: RoleAssistant, ToolCalls: []ToolCall{call("a", "f", "{}"), call("b", "g", "{}")}}
	resA := Message{Role: RoleTool, ToolCallID: "a", Content: []Part{TextPart("ok")}}
	entries := []Entry{
		{Seq: 1, Kind: EntryMessage, Message: &sys},
		{Seq: 2, Kind: EntryMessage, Message: &u1},
		{Seq: 3, Kind: EntryEvent, Event: &Event{Seq: 9}},
		{Seq: 4, Kind: EntryMessage, Message: &u2},
		{Seq: 5, Kind: EntryCompaction, Compaction: &Compaction{Replace: 1, Summary: []Message{UserMessage("summary")}}},
		{Seq: 6, Kind: EntryMessage, Message: &asst},
		{Seq: 7, Kind: EntryMessage, Message: &resA},
	}
	head := HeadOf(append(entries, Entry{Seq: 8, Kind: EntryEvent, Event: &Event{Seq: 11}}))
	if head.LastSeq != 8 || head.LastEventSeq != 11 || len(head.Transcript) != 6 {
		t.Fatalf("head: last seq %d, last event seq %d, %d transcript entries", head.LastSeq, head.LastEventSeq, len(head.Transcript))
	}
	var tr transcript
	if last := tr.project(head); last != 8 {
		t.Fatalf("last seq %d", last)
	}
	if tr.system == nil || tr.system.Text() != "sys" {
		t.Fatalf("system %v", tr.system)
	}
	var got []string
	for _, m := range tr.history {
		got = append(got, string(m.Role)+":"+m.Text())
	}
	equal(t, "history", got, []string{"user:summary", "user:two", "assistant:", "tool:ok"})
	equal(t, "seqs", tr.historySeqs, []int64{5, 4, 6, 7})
	equal(t, "unresolved", tr.unresolvedCalls(), []ToolCall{call("b", "g", "{}")})
	tr.add(&Message{Role: RoleTool, ToolCallID: "b", Content: []Part{TextPart("ok")}}, 8)
	if len(tr.unresolvedCalls()) != 0 {
		t.Fatal("b is resolved")
	}
}
