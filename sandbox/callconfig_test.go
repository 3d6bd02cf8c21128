package sandbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// A call's own config (a user's secret) is seen by that call only, over the plugin's
// config: the next call on the same (pooled) instance without it does not see it, and
// concurrent calls with different values each see their own.
func TestCallConfigIsSeenByItsCallOnly(t *testing.T) {
	r := newTestRuntime(t)
	p := loadGuest(t, r, Permissions{Config: map[string]string{"greeting": "hi", "token": "manifest's"}, Isolation: "pooled"}, nil)
	callWith := func(cfg map[string]string, key string) CallResult {
		t.Helper()
		ctx := context.Background()
		if cfg != nil {
			ctx = WithCallConfig(ctx, cfg)
		}
		res, err := p.InvokeTool(ctx, "config", []byte(`{"key":"`+key+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	wantResult(t, callWith(map[string]string{"token": "ana's"}, "token"), false, "ana's")
	wantResult(t, callWith(map[string]string{"token": "ana's"}, "greeting"), false, "hi")
	wantResult(t, callWith(nil, "token"), false, "manifest's")
	wantResult(t, callWith(map[string]string{"secret": "bo's"}, "secret"), false, "bo's")
	wantResult(t, callWith(nil, "secret"), true, `plugin "guest": config: no config secret`)

	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprintf("user-%d", i)
			res, err := p.InvokeTool(WithCallConfig(context.Background(), map[string]string{"secret": want}), "config", []byte(`{"key":"secret"}`))
			if err != nil || res.IsError || res.Text() != want {
				errs <- fmt.Errorf("call %d saw %q (%v)", i, res.Text(), err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
