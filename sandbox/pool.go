package sandbox

import (
	"context"
	"fmt"
	"sync"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/experimental"
)

// instance is one instantiation of an extism-based plugin. It serves one
// call at a time and is thrown away after any failure, since a trap, timeout
// or exit can leave its memory in any state.
type instance struct {
	ext   *extism.Plugin
	watch *memoryWatch
}

// pool bounds the instances of a plugin and reuses healthy ones. slots is a
// semaphore: a call holds a slot from acquire to release, so at most
// cap(slots) instances exist and further callers wait (or give up when their
// context ends).
type pool struct {
	slots chan struct{}
	make  func(ctx context.Context) (*instance, error)

	mu     sync.Mutex
	idle   []*instance
	closed bool
}

func newPool(size int, mk func(ctx context.Context) (*instance, error)) *pool {
	return &pool{slots: make(chan struct{}, size), make: mk}
}

func (p *pool) acquire(ctx context.Context) (*instance, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a free instance: %w", context.Cause(ctx))
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		return nil, errClosed
	}
	if n := len(p.idle); n > 0 {
		in := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return in, nil
	}
	p.mu.Unlock()
	in, err := p.make(ctx)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return in, nil
}

// release returns a healthy instance to the pool, or disposes of a used-up one.
func (p *pool) release(ctx context.Context, in *instance, healthy bool) {
	p.mu.Lock()
	if healthy && !p.closed {
		p.idle = append(p.idle, in)
		in = nil
	}
	p.mu.Unlock()
	if in != nil {
		_ = in.ext.Close(context.WithoutCancel(ctx))
	}
	<-p.slots
}

func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, in := range idle {
		_ = in.ext.Close(ctx)
	}
}

// newInstance instantiates the compiled plugin with the memory ceiling
// installed: every linear memory it creates (the guest's and the Extism
// kernel's) is allocated by the watch.
func (p *Plugin) newInstance(ctx context.Context) (*instance, error) {
	watch := &memoryWatch{limit: uint64(p.perms.memoryPages()) * pageSize}
	ictx := experimental.WithMemoryAllocator(context.WithoutCancel(ctx), watch)
	ext, err := p.compiled.Instance(ictx, extism.PluginInstanceConfig{ModuleConfig: p.moduleConfig})
	if err != nil {
		return nil, fmt.Errorf("instantiate plugin %q: %w", p.name, err)
	}
	ext.SetLogger(func(extism.LogLevel, string) {})
	return &instance{ext: ext, watch: watch}, nil
}
