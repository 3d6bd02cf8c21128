package loop

import (
	"context"
	"reflect"
	"testing"
)

// messagesStore is a MemoryStore whose LoadHead gives a head as a store's cold read does:
// its Messages one array of the head's own, with room after it.
type messagesStore struct {
	*MemoryStore
	given, snapshot []Message // the last array handed out, and a copy of it then
}

func (s *messagesStore) LoadHead(ctx context.Context, id string) (SessionHead, error) {
	h, err := s.MemoryStore.LoadHead(ctx, id)
	if err != nil || len(h.Transcript) == 0 {
		return h, err
	}
	ms := make([]Message, 0, len(h.Transcript)+8)
	for _, e := range h.Transcript {
		if e.Kind != EntryMessage {
			return h, nil
		}
		ms = append(ms, *e.Message)
	}
	h.Messages, s.given, s.snapshot = ms, ms, append([]Message(nil), ms...)
	return h, nil
}

// A head's Messages is what the run's model input slices: the model gets the array's
// elements, not copies, the run's own messages go into its room past its length, and
// nothing is written into what it held (a store's entries may point at those messages).
func TestModelInputSlicesTheHeadsMessagesAndNeverWritesIntoThem(t *testing.T) {
	st := &messagesStore{MemoryStore: NewMemoryStore()}
	model := script(turn{text: "hello"}, turn{calls: []ToolCall{call("c1", "calc", `{"expr":"2+3"}`)}}, turn{text: "5"})
	a := newAgent(t, Config{Model: model, Store: st, Tools: tools(t, calcTool()), SystemPrompt: "You add."})
	if res, _ := runCollect(t, a, userIn("s", "hi")); res.Final == nil || res.Final.Text() != "hello" {
		t.Fatalf("first run: %+v", res)
	}
	stored, err := st.Load(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	res, _ := runCollect(t, a, userIn("s", "2+3?"))
	if res.Final == nil || res.Final.Text() != "5" {
		t.Fatalf("second run: %+v", res)
	}
	n := len(st.snapshot) // system, hi, hello
	if n != 3 {
		t.Fatalf("head of the second run: %d messages, want 3", n)
	}
	reqs := model.requests()
	in := reqs[1].Messages // the second run's first model call
	if len(in) != n+1 || &in[0] != &st.given[0] || &in[n] != &st.given[:n+1][n] {
		t.Fatalf("model input is not the head's array with the input after it: %d messages", len(in))
	}
	if in[n].Role != RoleUser || in[n].Text() != "2+3?" {
		t.Fatalf("the run's input: %+v", in[n])
	}
	if !reflect.DeepEqual(st.given[:n], st.snapshot) {
		t.Fatal("the run wrote into the messages the head held")
	}
	again, err := st.Load(context.Background(), "s")
	if err != nil || !reflect.DeepEqual(again[:len(stored)], stored) {
		t.Fatalf("the stored entries changed: %v", err)
	}
	if last := reqs[2].Messages; len(last) != n+3 || last[n+2].Role != RoleTool {
		t.Fatalf("the tool round: %d messages", len(last))
	}
}
