package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// The tool-result cache (docs/caching.md): a tool that declares a CachePolicy may have a
// call answered from an earlier call's result, when the same tool of the same module and
// configuration was called with the same canonical arguments for the same scope subject
// within the TTL. The lookup is a stage of the one tool pipeline (pipeline.go, invoke):
// after every admission check (schema, guardrails, permission, approval), so a cached
// answer never skips a decision, and before the tool_result guardrail, which judges a
// cached result as it judges a fresh one. A tool without a policy is never cached.

// The scopes of CachePolicy.Scope: whose calls share results.
const (
	CacheScopeSession = "session" // the calls of one session
	CacheScopeUser    = "user"    // the calls of one user's runs (never an anonymous run's)
	CacheScopeGlobal  = "global"  // every call
)

// CachePolicy is a tool's declaration that its results may be reused.
type CachePolicy struct {
	TTL   time.Duration
	Scope string // CacheScopeSession, CacheScopeUser or CacheScopeGlobal
	// Identity names what produced a result: for a plugin, its module's digest and its
	// configuration's hash; a rebuilt module or a changed configuration has another
	// identity, so the results of the old one are not found.
	Identity string
}

// CacheableTool is a Tool whose results may be reused: CachePolicy reports false when
// this one may not (the loop then never looks it up).
type CacheableTool interface {
	Tool
	CachePolicy() (CachePolicy, bool)
}

// CachedResult is one stored result of a cacheable tool.
type CachedResult struct {
	Key     string // CacheKey's: the only thing a lookup matches
	User    string // the run's user, "" when anonymous: erased with the user
	Session string // the run's session: erased with the session
	Tool    string // the tool's name, for reports
	Result  []byte // the ToolResult as JSON
	Stored  time.Time
	Expires time.Time
}

// ResultCache keeps cached tool results. GetResult reports a result stored under key
// whose Expires is after now; PutResult stores one, replacing any under its key, and may
// drop others to stay within its bounds (an entry over its size bound is not stored).
// The loop treats a failure of either as a miss: a cache never fails a call.
type ResultCache interface {
	GetResult(ctx context.Context, key string, now time.Time) (CachedResult, bool, error)
	PutResult(ctx context.Context, r CachedResult) error
}

// CacheKey is the key of a call's result: the tool's identity, its name, its canonical
// arguments (keys sorted: two spellings of one call share it), the scope and the scope's
// subject (the session id, the user, or nothing). ok is false when the call is not
// cacheable: a user-scoped call of an anonymous run, or an unknown scope.
func CacheKey(p CachePolicy, tool, args string, info CallInfo) (key string, ok bool) {
	var subject string
	switch p.Scope {
	case CacheScopeSession:
		subject = info.SessionID
	case CacheScopeUser:
		if info.User == "" {
			return "", false
		}
		subject = info.User
	case CacheScopeGlobal:
	default:
		return "", false
	}
	if c, isJSON := canonicalJSON(args); isJSON {
		args = c
	}
	h := sha256.New()
	for _, s := range []string{p.Identity, tool, args, p.Scope, subject} {
		n := len(s)
		h.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}) // length-prefixed: no two tuples collide
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// cacheLookup answers a call from the cache when its tool is cacheable and a live result
// is stored. It returns the key to store a fresh result under ("" when none is to be
// stored) and whether pc now holds a cached result.
func (r *run) cacheLookup(ctx context.Context, pc *pendingCall) (key string, hit bool) {
	rc := r.cfg.ResultCache
	ct, ok := pc.tool.(CacheableTool)
	if rc == nil || !ok {
		return "", false
	}
	p, ok := ct.CachePolicy()
	if !ok || p.TTL <= 0 {
		return "", false
	}
	key, ok = CacheKey(p, pc.call.Name, pc.args, r.rc.info)
	if !ok {
		return "", false
	}
	now := r.cfg.Driver.Now()
	got, found, err := rc.GetResult(ctx, key, now)
	if err != nil || !found {
		return key, false
	}
	var res ToolResult
	if json.Unmarshal(got.Result, &res) != nil {
		return key, false
	}
	pc.result, pc.cached, pc.cacheAge = res, true, max(now.Sub(got.Stored), 0)
	return "", true
}

// cacheStore keeps a fresh result under key: only a result the tool gave without error
// (an error, a timeout or a refusal is not an answer to reuse), and never one that ends
// the run or waits for a human.
func (r *run) cacheStore(ctx context.Context, pc *pendingCall, key string) {
	if key == "" || pc.pending || pc.result.IsError || pc.result.Done {
		return
	}
	ct := pc.tool.(CacheableTool)
	p, _ := ct.CachePolicy()
	b, err := json.Marshal(pc.result)
	if err != nil {
		return
	}
	info, now := r.rc.info, r.cfg.Driver.Now()
	_ = r.cfg.ResultCache.PutResult(context.WithoutCancel(ctx), CachedResult{Key: key, User: info.User, Session: info.SessionID,
		Tool: pc.call.Name, Result: b, Stored: now, Expires: now.Add(p.TTL)})
}
