package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// holdStore blocks the append that stores an assistant message until release is
// closed, and says on held that it is blocked.
type holdStore struct {
	*loop.MemoryStore
	held    chan struct{}
	release chan struct{}
}

func (s holdStore) Append(ctx context.Context, id string, es ...loop.Entry) error {
	for _, e := range es {
		if e.Message != nil && e.Message.Role == loop.RoleAssistant {
			close(s.held)
			<-s.release
		}
	}
	return s.MemoryStore.Append(ctx, id, es...)
}

// TEXT_MESSAGE_END is sent when the model's text ends, not after the loop has stored
// the message: with the store's write of the answer held, the client already has the
// whole message, closed.
func TestTextMessageEndsBeforeTheAnswerIsStored(t *testing.T) {
	st := holdStore{loop.NewMemoryStore(), make(chan struct{}), make(chan struct{})}
	e := newTestEnv(t, envOptions{store: st}, turn{text: "The sum is 42."})
	resp := e.do(t, "POST", "/v1/runs", runBody("s1", "r1", "what is 2+40?"), "")
	defer resp.Body.Close()
	defer close(st.release) // on failure too: the run must end for the env to drain
	got := make(chan []string, 1)
	go func() {
		var seen []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev map[string]any
			_ = json.Unmarshal([]byte(data), &ev)
			seen = append(seen, ev["type"].(string))
			if ev["type"] == "TEXT_MESSAGE_END" {
				got <- seen
				return
			}
		}
		got <- seen
	}()
	select {
	case <-st.held:
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("the answer was never stored")
	}
	select {
	case seen := <-got:
		if seen[len(seen)-1] != "TEXT_MESSAGE_END" {
			t.Fatalf("stream ended without TEXT_MESSAGE_END: %v", seen)
		}
	case <-time.After(10 * time.Second): // a hang guard: the end waits for the store
		t.Fatal("TEXT_MESSAGE_END is not sent while the answer is being stored")
	}
}

// stateStrategy records the client's state and context and answers with a new state.
type stateStrategy struct {
	seen chan loop.ContextInput
}

func (stateStrategy) Name() string { return "state" }
func (s stateStrategy) Build(_ context.Context, in loop.ContextInput) (loop.ContextOutput, error) {
	s.seen <- in
	return loop.ContextOutput{State: json.RawMessage(`{"cart":["apple","pear"]}`)}, nil
}

// RunAgentInput.state and .context reach the context strategies, and a strategy's new
// state reaches the client as STATE_SNAPSHOT; the built-in strategy puts the context in
// the system message.
func TestStateAndContextReachStrategiesAndStateSnapshotReturns(t *testing.T) {
	seen := make(chan loop.ContextInput, 4)
	e := newTestEnv(t, envOptions{context: []loop.ContextStrategy{stateStrategy{seen}}}, turn{text: "ok"})
	body := `{"threadId":"s1","runId":"r1","messages":[{"id":"u1","role":"user","content":"hi"}],
		"state":{"cart":["apple"]},"context":[{"description":"page","value":"/checkout"}]}`
	evs := e.run(t, body)
	in := <-seen
	if string(in.State) != `{"cart":["apple"]}` || len(in.Context) != 1 || in.Context[0] != (loop.ContextItem{Description: "page", Value: "/checkout"}) {
		t.Fatalf("strategy got state %s context %+v", in.State, in.Context)
	}
	var snaps []string
	for _, s := range brief(evs) {
		if strings.HasPrefix(s, "STATE_SNAPSHOT") {
			snaps = append(snaps, s)
		}
	}
	equalLines(t, "state snapshots", snaps, []string{`STATE_SNAPSHOT {"cart":["apple","pear"]}`})
}

// TOOL_CALL_ARGS arrive as the model produces them: with the scripted provider
// streaming a call's arguments in 4-rune pieces 150 ms apart, the client gets each
// piece in its own event, each stamped before the model's stream ended (TOOL_CALL_END).
func TestToolCallArgsStreamAsTheModelProducesThem(t *testing.T) {
	args := `{"expression":"17*23"}`
	fixture := fmt.Sprintf(`{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": %q}], "args_chunk": 4, "chunk_delay_ms": 150},
	  {"text": "391"}]}`, args)
	dir := t.TempDir()
	manifest := writeManifest(t, dir, fixture, "", true)
	_, ts := serveHost(t, manifest, "")
	env := &testEnv{ts: ts}
	evs := env.run(t, runBody("s1", "r1", "17*23?"))
	var pieces []string
	var stamps []float64
	var end float64
	for _, ev := range evs {
		switch ev["type"] {
		case "TOOL_CALL_ARGS":
			pieces = append(pieces, ev["delta"].(string))
			stamps = append(stamps, ev["timestamp"].(float64))
		case "TOOL_CALL_END":
			end = ev["timestamp"].(float64)
		}
	}
	if strings.Join(pieces, "") != args || len(pieces) != (len(args)+3)/4 {
		t.Fatalf("args pieces %q", pieces)
	}
	for i, s := range stamps {
		if s >= end || (i > 0 && s <= stamps[i-1]) {
			t.Fatalf("args stamped %v, the call ended at %v: not streamed as produced", stamps, end)
		}
	}
}
