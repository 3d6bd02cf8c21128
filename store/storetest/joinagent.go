package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/loop/looptest"
)

// JoinAgent is an agent on st with one tool, "join" ({"words": [...]} → the words
// joined by "-"), that counts its calls in calls: the tool of the stores' workflow
// kill tests, which count how often a resume calls it again.
func JoinAgent(t testing.TB, st loop.SessionStore, calls *atomic.Int64) *loop.Agent {
	t.Helper()
	join := loop.FuncTool{
		ToolSpec: loop.ToolSpec{Name: "join", Description: "join words", InputSchema: json.RawMessage(`{"type":"object","properties":{"words":{"type":"array","items":{"type":"string"}}},"required":["words"]}`)},
		Fn: func(_ context.Context, c loop.ToolCall) (loop.ToolResult, error) {
			calls.Add(1)
			var in struct{ Words []string }
			if err := json.Unmarshal([]byte(c.Arguments), &in); err != nil {
				return loop.ErrorResult(err.Error()), nil
			}
			return loop.TextResult(strings.Join(in.Words, "-")), nil
		},
	}
	tools, err := loop.NewToolSet(join)
	if err != nil {
		t.Fatal(err)
	}
	a, err := loop.New(loop.Config{Name: "wf", Model: looptest.NewModel(), Tools: tools, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return a
}
