package sandbox

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/experimental"
)

// instance is one instantiation of an extism-based plugin. It serves one
// call at a time and is thrown away after any failure, since a trap, timeout
// or exit can leave its memory in any state.
type instance struct {
	ext   *extism.Plugin
	watch *memoryWatch
	out   *callOutput // what the current call writes and logs (output.go)
	clock *callClock  // its sleep, which ends with the call it serves (blocking.go)
	key   string      // the session it serves (isolation "session")
	used  time.Time   // when it was last released
}

// sessionIdle is how long an idle instance of a session is kept for that
// session's next call (isolation "session"); older ones are closed at the
// next acquire.
const sessionIdle = 5 * time.Minute

// pool bounds the instances of a plugin and reuses healthy ones as its
// isolation allows. slots is a semaphore: a call holds a slot from acquire
// to release, so at most cap(slots) calls run at once and further callers
// wait (or give up when their context ends). Idle instances count too: at
// most cap(slots) instances exist, idle or busy; a call that finds none for
// its key closes the least recently used idle one to make room.
type pool struct {
	slots     chan struct{}
	make      func(ctx context.Context) (*instance, error)
	isolation string
	idleTTL   time.Duration // sessionIdle; a field so tests can expire instances

	mu     sync.Mutex
	idle   []*instance // oldest release first
	busy   int
	closed bool
}

func newPool(size int, isolation string, mk func(ctx context.Context) (*instance, error)) *pool {
	return &pool{slots: make(chan struct{}, size), make: mk, isolation: isolation, idleTTL: sessionIdle}
}

// acquire returns an instance for a call of session key (ignored unless the
// isolation is "session").
func (p *pool) acquire(ctx context.Context, key string) (*instance, error) {
	if p.isolation != IsolationSession {
		key = ""
	}
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
	stale := p.expireLocked(time.Now())
	var in *instance
	for i := len(p.idle) - 1; i >= 0; i-- {
		if p.idle[i].key == key {
			in = p.idle[i]
			p.idle = slices.Delete(p.idle, i, i+1)
			break
		}
	}
	if in == nil && len(p.idle)+p.busy >= cap(p.slots) && len(p.idle) > 0 {
		stale = append(stale, p.idle[0])
		p.idle = slices.Delete(p.idle, 0, 1)
	}
	p.busy++
	p.mu.Unlock()
	closeAll(ctx, stale)
	if in != nil {
		return in, nil
	}
	in, err := p.make(ctx)
	if err != nil {
		p.mu.Lock()
		p.busy--
		p.mu.Unlock()
		<-p.slots
		return nil, err
	}
	in.key = key
	return in, nil
}

// expireLocked takes the instances idle for longer than sessionIdle out of
// the pool, for the caller to close outside the lock.
func (p *pool) expireLocked(now time.Time) []*instance {
	if p.isolation != IsolationSession {
		return nil // one key: the idle instances are the next calls' warm ones
	}
	n := 0
	for n < len(p.idle) && now.Sub(p.idle[n].used) > p.idleTTL {
		n++
	}
	old := slices.Clone(p.idle[:n])
	p.idle = slices.Delete(p.idle, 0, n)
	return old
}

// release returns a healthy instance to the pool, or disposes of a used-up
// one; with isolation "call" every instance is used up after one call.
func (p *pool) release(ctx context.Context, in *instance, healthy bool) {
	p.mu.Lock()
	p.busy--
	if healthy && !p.closed && p.isolation != IsolationCall {
		in.used = time.Now()
		p.idle = append(p.idle, in)
		in = nil
	}
	p.mu.Unlock()
	if in != nil {
		in.dispose(ctx)
	}
	<-p.slots
}

// forget closes the idle instances of session key (isolation "session") and clears their
// memories before they are kept for reuse: what a deleted session left in a plugin's
// globals and heap is gone when the deletion answers, not when the memory is next
// handed out. It reports how many it closed.
func (p *pool) forget(ctx context.Context, key string) int {
	if p.isolation != IsolationSession {
		return 0
	}
	p.mu.Lock()
	var gone []*instance
	p.idle = slices.DeleteFunc(p.idle, func(in *instance) bool {
		if in.key == key {
			gone = append(gone, in)
			return true
		}
		return false
	})
	p.mu.Unlock()
	for _, in := range gone {
		_ = in.ext.Close(context.WithoutCancel(ctx))
		for _, m := range in.watch.mems {
			clear(m.buf)
		}
		in.watch.recycle()
	}
	return len(gone)
}

func closeAll(ctx context.Context, ins []*instance) {
	for _, in := range ins {
		in.dispose(ctx)
	}
}

// dispose closes an instance that no call is using and recycles its memory.
func (in *instance) dispose(ctx context.Context) {
	_ = in.ext.Close(context.WithoutCancel(ctx))
	in.watch.recycle()
}

func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	closeAll(ctx, idle)
}

// newInstance instantiates the compiled plugin with the memory ceiling
// installed: every linear memory it creates (the guest's and the Extism
// kernel's) is allocated by the watch.
func (p *Plugin) newInstance(ctx context.Context) (*instance, error) {
	watch := &memoryWatch{limit: uint64(p.perms.memoryPages()) * pageSize, pool: p.memories}
	ictx := experimental.WithMemoryAllocator(context.WithoutCancel(ctx), watch)
	out := newCallOutput()
	clock := &callClock{}
	mc := p.moduleConfig.WithStdout(lockedWriter{out, &out.stdout}).WithStderr(lockedWriter{out, &out.stderr}).
		WithNanosleep(clock.nanosleep)
	ext, err := p.compiled.Instance(ictx, extism.PluginInstanceConfig{ModuleConfig: mc})
	if err != nil {
		return nil, fmt.Errorf("instantiate plugin %q: %w", p.name, err)
	}
	ext.SetLogger(out.log)
	return &instance{ext: ext, watch: watch, out: out, clock: clock}, nil
}
