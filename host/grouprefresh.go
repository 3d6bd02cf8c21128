package host

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// A measured tool group's values (toolmeasure.go) are read when the agent is built and
// again while it lives (docs/loop.md, "Tool groups"): at most every refresh
// ([tool_groups.NAME] refresh, default manifest.DefaultGroupRefresh), lazily, at the
// first choice of the group after the interval passed. The refresh reads the stored
// runs in the background; the choice that started it, and those until it ends, use the
// values there are. Refreshes are the host's background work: Close cancels and waits
// for them (refreshes), so none outlives the host or reads a closed store.

// groupMeasure keeps one group's measured members for an agent.
type groupMeasure struct {
	h       *Host
	base    loop.ToolGroup // the members as declared (unmeasured)
	window  time.Duration
	every   time.Duration
	mu      sync.Mutex
	members []loop.GroupMember // the values choices use; replaced whole, never changed
	at      time.Time          // when they were read
	running bool               // a refresh is under way
}

// newGroupMeasure starts from g as measured when the agent was built, at now.
func newGroupMeasure(h *Host, g loop.ToolGroup, window, every time.Duration) *groupMeasure {
	base := g
	base.Members = slices.Clone(g.Members)
	for i := range base.Members {
		base.Members[i] = loop.GroupMember{Tool: g.Members[i].Tool, Cost: g.Members[i].Cost}
	}
	return &groupMeasure{h: h, base: base, window: window, every: every, members: g.Members, at: h.now()}
}

// current is loop.ToolGroup.Measure: the values there are, and a refresh started in the
// background when they are older than every and none runs.
func (gm *groupMeasure) current() []loop.GroupMember {
	gm.mu.Lock()
	defer gm.mu.Unlock()
	if !gm.running && gm.h.now().Sub(gm.at) >= gm.every && gm.h.refreshes.start(gm.refresh) {
		gm.running = true
	}
	return gm.members
}

// refresh reads the members' values again. On an error (the store unreachable, the host
// closing) the old values stay, and the next refresh is due after every again.
func (gm *groupMeasure) refresh(ctx context.Context) {
	g := gm.base
	g.Members = slices.Clone(gm.base.Members)
	err := gm.h.measureMembers(ctx, &g, gm.window, nil)
	now := gm.h.now()
	gm.mu.Lock()
	defer gm.mu.Unlock()
	if err == nil {
		gm.members = g.Members
	}
	gm.at, gm.running = now, false
}

// refreshes is the host's background refreshes: started until Close, which cancels
// them and waits for them. Its zero value is ready.
type refreshes struct {
	mu     sync.Mutex
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
	closed bool
}

// start runs f in the background, unless the host is closed (then it reports false).
func (r *refreshes) start(f func(context.Context)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	if r.ctx == nil {
		r.ctx, r.cancel = context.WithCancel(context.Background())
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f(r.ctx)
	}()
	return true
}

// close cancels the refreshes under way, waits for them and starts no more.
func (r *refreshes) close() {
	r.mu.Lock()
	r.closed = true
	if r.cancel != nil {
		r.cancel()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
