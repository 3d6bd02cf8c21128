package looptest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/loop/looptest"
)

func TestModelPlaysTurnsInOrderAndRecordsRequests(t *testing.T) {
	m := looptest.NewModel(looptest.Turn{Text: "hi"}, looptest.Turn{Err: errors.New("boom")})
	a, err := loop.New(loop.Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), loop.RunInput{Messages: []loop.Message{loop.UserMessage("q")}})
	if err != nil || res.Final.Text() != "hi" || len(m.Requests()) != 1 || m.Requests()[0].Messages[0].Text() != "q" {
		t.Fatalf("res %+v err %v", res, err)
	}
	if _, err := m.Stream(context.Background(), loop.Request{}); err == nil || err.Error() != "boom" {
		t.Fatalf("second turn err %v", err)
	}
	var me *loop.ModelError
	if _, err := m.Stream(context.Background(), loop.Request{}); !errors.As(err, &me) {
		t.Fatalf("out of turns err %v", err)
	}
}

func TestDeltasAndStreamAndHang(t *testing.T) {
	ds := looptest.Deltas(looptest.Turn{Text: "abcd", Calls: []loop.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}, Stop: "max_tokens"})
	var got []string
	s := looptest.NewStream(ds...)
	for {
		d, err := s.Recv()
		if err == io.EOF {
			break
		}
		got = append(got, fmt.Sprintf("%d:%s", d.Seq, d.Kind))
	}
	want := []string{"1:text", "2:text", "3:tool_call", "4:tool_call", "5:usage", "6:finish"}
	if fmt.Sprint(got) != fmt.Sprint(want) || ds[5].StopReason != "max_tokens" || s.Close() != nil {
		t.Fatalf("got %v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	hs, _ := looptest.NewModel(looptest.Turn{Hang: true}).Stream(ctx, loop.Request{})
	if _, err := hs.Recv(); !errors.Is(err, context.Canceled) {
		t.Fatalf("hang err %v", err)
	}
}

func TestSessionModelPlaysTheTurnsPerSessionAndRepeat(t *testing.T) {
	m := looptest.NewSessionModel(looptest.Turn{Text: "one"}, looptest.Turn{Text: "two"}).Repeat()
	texts := func(session string) string {
		st, err := m.Stream(context.Background(), loop.Request{Metadata: loop.RequestMetadata{SessionID: session}})
		if err != nil {
			t.Fatal(err)
		}
		var out string
		for {
			d, err := st.Recv()
			if err != nil {
				return out
			}
			out += d.Text
		}
	}
	got := []string{texts("a"), texts("b"), texts("a"), texts("a"), texts("b")}
	if strings.Join(got, ",") != "one,one,two,one,two" {
		t.Fatalf("turns %v", got)
	}
}

func TestDeltasChunkReasoningAndStarted(t *testing.T) {
	ds := looptest.Deltas(looptest.Turn{Reasoning: "hm", Text: "héllo!", Chunk: 4})
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%d %s %q", d.Seq, d.Kind, d.Text))
	}
	want := []string{`1 reasoning "hm"`, `2 text "héll"`, `3 text "o!"`, `4 usage ""`, `5 finish ""`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("deltas:\n%s", strings.Join(got, "\n"))
	}
	started := make(chan struct{}, 1)
	m := looptest.NewModel(looptest.Turn{Text: "x", Started: started})
	if _, err := m.Stream(context.Background(), loop.Request{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	default:
		t.Fatal("Started got nothing")
	}
	if _, err := m.Stream(context.Background(), loop.Request{}); err == nil || !strings.Contains(err.Error(), looptest.ErrOutOfTurns.Error()) {
		t.Fatalf("after the last turn: %v", err)
	}
}
