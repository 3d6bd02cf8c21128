package sandbox

import (
	"context"
	"sync"
	"testing"
)

// An Extism tool learns its call's id, session and run from the call_meta host function
// (the _meta an mcp plugin gets, the environment a wasi command gets): its instances are
// pooled, so the ids are asked per call, never configured. Each call sees its own ids,
// also when calls of one pooled instance alternate and when they run at once; a call
// without ids gets {}, and "tool" and names outside [a-z0-9_] are left out.
func TestExtismToolsLearnTheirCallIDsFromCallMeta(t *testing.T) {
	r := newTestRuntime(t)
	p := load(t, r, Config{Name: "guest", Wasm: fixtures.guest, PoolSize: 2,
		Permissions: Permissions{Isolation: IsolationPooled}, Tools: tools(map[string]string{"call_ids": ""})})
	call := func(ctx context.Context) string {
		t.Helper()
		res, err := p.InvokeTool(ctx, "call_ids", []byte(`{}`))
		if err != nil || res.IsError {
			t.Fatalf("call_ids: %v %q", err, res.Text())
		}
		return res.Text()
	}
	meta := func(id string) context.Context {
		return WithCallMeta(context.Background(), map[string]any{"agenthost/call_id": id, "agenthost/session_id": "s1",
			"agenthost/run_id": "r1", "agenthost/tool": "other", "agenthost/Bad-Name": "x", "progressToken": "p"})
	}
	for _, id := range []string{"call_1", "call_2", "call_1"} {
		if got, want := call(meta(id)), `{"call_id":"`+id+`","run_id":"r1","session_id":"s1"}`; got != want {
			t.Fatalf("call_ids with %s = %s, want %s", id, got, want)
		}
	}
	if got := call(context.Background()); got != `{}` {
		t.Fatalf("call_ids without ids = %s, want {}", got)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "c" + string(rune('a'+i))
			res, err := p.InvokeTool(meta(id), "call_ids", []byte(`{}`))
			if want := `{"call_id":"` + id + `","run_id":"r1","session_id":"s1"}`; err != nil || res.Text() != want {
				t.Errorf("concurrent call %s = %q %v, want %s", id, res.Text(), err, want)
			}
		}()
	}
	wg.Wait()
}
