package providers_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/providers"
)

// bigHistory is a conversation whose n tool results of size bytes each follow one
// assistant message that called them c1…cn.
func bigHistory(n, size int) []*providers.Message {
	msgs := []*providers.Message{userMsg("read everything")}
	call := &providers.Message{Role: providers.RoleAssistant}
	for i := 1; i <= n; i++ {
		call.ToolCalls = append(call.ToolCalls, &providers.ToolCall{Id: fmt.Sprintf("c%d", i), Name: "read", Arguments: "{}"})
	}
	msgs = append(msgs, call)
	for i := 1; i <= n; i++ {
		msgs = append(msgs, &providers.Message{Role: providers.RoleTool, ToolCallId: fmt.Sprintf("c%d", i),
			Content: []*providers.Part{{Type: providers.PartText, Text: strings.Repeat(string(rune('a'+i-1)), size)}}})
	}
	return msgs
}

// TestSessionPastFourMiBOfToolResultsKeepsWorking: a request whose tool results add up
// to 5 MiB reaches the real adapter whole (it counts the messages), and an answer of
// 5 MiB in one event (the adapter echoes every result) reaches the host. With gRPC's
// default 4 MiB limit either direction failed, and the session failed for good.
func TestSessionPastFourMiBOfToolResultsKeepsWorking(t *testing.T) {
	c := startWith(t, `{"turns": [{"expect": {"messages": 7},
		"text": "{{result c1}}{{result c2}}{{result c3}}{{result c4}}{{result c5}}"}]}`, providers.ClientConfig{})
	st, err := c.Stream(context.Background(), &providers.ChatRequest{Messages: bigHistory(5, 1<<20)})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for {
		ev, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		text.WriteString(ev.GetText())
	}
	want := strings.Repeat("a", 1<<20) + strings.Repeat("b", 1<<20) + strings.Repeat("c", 1<<20) + strings.Repeat("d", 1<<20) + strings.Repeat("e", 1<<20)
	if text.Len() != len(want) || text.String() != want {
		t.Fatalf("answer of %d bytes, want the %d bytes of the five results", text.Len(), len(want))
	}
}

// TestRequestOverTheConnectionLimitIsAContextOverflow: a request larger than the
// connection carries is not a dead adapter (no restart, no retry): it is a
// context_overflow, the loop's cue to compact, and the next call is answered by the
// same process.
func TestRequestOverTheConnectionLimitIsAContextOverflow(t *testing.T) {
	t.Cleanup(providers.SetMaxMessageSize(2 << 20))
	c := startWith(t, `{"turns": [{"text": "small ok"}]}`, providers.ClientConfig{})
	pid := c.PID()
	_, err := c.Stream(context.Background(), &providers.ChatRequest{Messages: bigHistory(3, 1<<20)})
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Kind != providers.KindContextOverflow || pe.Retryable ||
		!strings.Contains(pe.Message, `provider "scripted": the request or its answer exceeds the 2 MiB the adapter connection carries`) {
		t.Fatalf("err = %#v", err)
	}
	st, err := c.Stream(context.Background(), &providers.ChatRequest{Messages: []*providers.Message{userMsg("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := collect(t, st); !errors.Is(err, io.EOF) || !strings.Contains(join(got), `text "small ok"`) {
		t.Fatalf("next call: %q, %v", got, err)
	}
	if c.PID() != pid {
		t.Fatalf("adapter restarted: pid %d -> %d", pid, c.PID())
	}
}
