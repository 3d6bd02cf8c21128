package sandbox

import (
	"context"
	"runtime"
	"sync"
)

// LoadAll loads cfgs at once, at most GOMAXPROCS at a time: a manifest's plugins are
// independent, and most of a warm start is per-module work (decoding, fetching the
// compiled code, instantiating, inspecting) that runs on all cores. The plugins come in
// cfgs' order. When some fail, the ones loaded are closed and the error is that of the
// first failing config in order, with its index, so a start reports the same error
// whichever load finished first.
func (r *Runtime) LoadAll(ctx context.Context, cfgs []Config) ([]*Plugin, int, error) {
	return LoadEach(ctx, len(cfgs), func(ctx context.Context, i int) (*Plugin, error) { return r.Load(ctx, cfgs[i]) })
}

// LoadEach runs load for 0..n-1 at once (at most GOMAXPROCS at a time), as LoadAll, for
// a caller that does more per plugin than Load (checks, spans).
func LoadEach(ctx context.Context, n int, load func(ctx context.Context, i int) (*Plugin, error)) ([]*Plugin, int, error) {
	out := make([]*Plugin, n)
	errs := make([]error, n)
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = load(ctx, i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			for _, p := range out {
				if p != nil {
					p.Close(ctx)
				}
			}
			return nil, i, err
		}
	}
	return out, -1, nil
}
