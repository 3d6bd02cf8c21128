package loop

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memCache is a ResultCache in memory, as the stores keep one (they are tested in store).
type memCache struct {
	mu sync.Mutex
	m  map[string]CachedResult
}

func (c *memCache) GetResult(_ context.Context, key string, now time.Time) (CachedResult, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[key]
	if !ok || !now.Before(r.Expires) {
		return CachedResult{}, false, nil
	}
	return r, true, nil
}

func (c *memCache) PutResult(_ context.Context, r CachedResult) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[r.Key] = r
	return nil
}

// countedTool counts its executions; policy, when set, makes it cacheable.
type countedTool struct {
	FuncTool
	policy *CachePolicy
}

func (t countedTool) CachePolicy() (CachePolicy, bool) {
	if t.policy == nil {
		return CachePolicy{}, false
	}
	return *t.policy, true
}

func newCounted(runs *atomic.Int32, policy *CachePolicy) countedTool {
	return countedTool{FuncTool: FuncTool{ToolSpec: ToolSpec{Name: "lookup"}, Fn: func(context.Context, ToolCall) (ToolResult, error) {
		return TextResult("answer " + string(rune('0'+runs.Add(1)))), nil
	}}, policy: policy}
}

type cacheHarness struct {
	t     *testing.T
	cache *memCache
	now   time.Time
	runs  atomic.Int32
}

// run makes one run of user on session calling lookup with args and returns its
// tool_result event.
func (h *cacheHarness) run(policy *CachePolicy, user, session, args string) ToolResultData {
	h.t.Helper()
	m := script(turn{calls: []ToolCall{call("c1", "lookup", args)}}, turn{text: "done"})
	a := newAgent(h.t, Config{Model: m, Tools: tools(h.t, newCounted(&h.runs, policy)), ResultCache: h.cache,
		Driver: testDriver{now: func() time.Time { return h.now }}})
	in := userIn(session, "go")
	in.User = user
	_, evs := runCollect(h.t, a, in)
	for _, e := range evs {
		if d, ok := e.Data.(*ToolResultData); ok {
			return *d
		}
	}
	h.t.Fatal("no tool_result")
	return ToolResultData{}
}

func newCacheHarness(t *testing.T) *cacheHarness {
	return &cacheHarness{t: t, cache: &memCache{m: map[string]CachedResult{}}, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func TestResultCache_AUserScopedToolRunsOnceForOneUserAndAgainForAnother(t *testing.T) {
	h := newCacheHarness(t)
	p := &CachePolicy{TTL: 10 * time.Minute, Scope: CacheScopeUser, Identity: "module-a"}
	first := h.run(p, "ann", "s1", `{"q":"x","n":1}`)
	h.now = h.now.Add(3 * time.Second)
	second := h.run(p, "ann", "s2", `{"n":1, "q":"x"}`) // another session, same call spelt otherwise
	if first.Cached || !second.Cached || second.Content != first.Content || second.CacheAgeMS != 3000 {
		t.Fatalf("first %+v second %+v", first, second)
	}
	if other := h.run(p, "bob", "s3", `{"q":"x","n":1}`); other.Cached || other.Content != "answer 2" {
		t.Fatalf("another user's call: %+v", other)
	}
	if anon := h.run(p, "", "s4", `{"q":"x","n":1}`); anon.Cached {
		t.Fatalf("an anonymous run's user-scoped call hit: %+v", anon)
	}
	if n := h.runs.Load(); n != 3 {
		t.Fatalf("tool ran %d times, want 3", n)
	}
}

func TestResultCache_ExpiresAfterTheTTLByTheDriverClock(t *testing.T) {
	h := newCacheHarness(t)
	p := &CachePolicy{TTL: time.Minute, Scope: CacheScopeGlobal, Identity: "m"}
	h.run(p, "", "s1", `{}`)
	h.now = h.now.Add(time.Minute - time.Millisecond)
	if r := h.run(p, "", "s2", `{}`); !r.Cached {
		t.Fatalf("within the TTL: %+v", r)
	}
	h.now = h.now.Add(time.Millisecond)
	if r := h.run(p, "", "s3", `{}`); r.Cached || r.Content != "answer 2" {
		t.Fatalf("at the TTL: %+v", r)
	}
}

func TestResultCache_AnotherIdentityOrScopeSubjectMisses(t *testing.T) {
	h := newCacheHarness(t)
	h.run(&CachePolicy{TTL: time.Hour, Scope: CacheScopeSession, Identity: "m1"}, "ann", "s1", `{}`)
	if r := h.run(&CachePolicy{TTL: time.Hour, Scope: CacheScopeSession, Identity: "m1"}, "ann", "s2", `{}`); r.Cached {
		t.Fatalf("session scope hit in another session: %+v", r)
	}
	if r := h.run(&CachePolicy{TTL: time.Hour, Scope: CacheScopeSession, Identity: "m2"}, "ann", "s1", `{}`); r.Cached {
		t.Fatalf("a rebuilt module hit: %+v", r)
	}
	if r := h.run(&CachePolicy{TTL: time.Hour, Scope: CacheScopeSession, Identity: "m1"}, "ann", "s1", `{}`); !r.Cached {
		t.Fatalf("same module, session and call missed: %+v", r)
	}
}

func TestResultCache_NeverForAToolNotDeclaredCacheable(t *testing.T) {
	h := newCacheHarness(t)
	h.run(nil, "ann", "s1", `{}`)
	h.run(nil, "ann", "s1", `{}`)
	if n, kept := h.runs.Load(), len(h.cache.m); n != 2 || kept != 0 {
		t.Fatalf("runs %d, cached entries %d", n, kept)
	}
}

func TestResultCache_ADeniedCallIsNotAnsweredFromTheCache(t *testing.T) {
	h := newCacheHarness(t)
	p := &CachePolicy{TTL: time.Hour, Scope: CacheScopeGlobal, Identity: "m"}
	h.run(p, "", "s1", `{}`)
	m := script(turn{calls: []ToolCall{call("c1", "lookup", `{}`)}}, turn{text: "done"})
	deny := func(context.Context, ToolCall) PermissionDecision {
		return PermissionDecision{Verdict: PermitDeny, Reason: "no"}
	}
	a := newAgent(t, Config{Model: m, Tools: tools(t, newCounted(&h.runs, p)), ResultCache: h.cache, Permission: deny,
		Driver: testDriver{now: func() time.Time { return h.now }}})
	_, evs := runCollect(t, a, userIn("s2", "go"))
	for _, e := range evs {
		if d, ok := e.Data.(*ToolResultData); ok && (d.Cached || !d.IsError) {
			t.Fatalf("denied call answered: %+v", d)
		}
	}
}

func TestResultCache_AnErrorResultIsNotKept(t *testing.T) {
	h := newCacheHarness(t)
	p := CachePolicy{TTL: time.Hour, Scope: CacheScopeGlobal, Identity: "m"}
	failing := countedTool{FuncTool: FuncTool{ToolSpec: ToolSpec{Name: "lookup"}, Fn: func(context.Context, ToolCall) (ToolResult, error) {
		h.runs.Add(1)
		return ErrorResult("down"), nil
	}}, policy: &p}
	for range 2 {
		m := script(turn{calls: []ToolCall{call("c1", "lookup", `{}`)}}, turn{text: "done"})
		a := newAgent(t, Config{Model: m, Tools: tools(t, failing), ResultCache: h.cache})
		runCollect(t, a, userIn("s", "go"))
	}
	if n := h.runs.Load(); n != 2 || len(h.cache.m) != 0 {
		t.Fatalf("runs %d, kept %d", n, len(h.cache.m))
	}
}
