package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/telemetry"
)

// The tool-result cache's wiring (docs/caching.md): the loop looks a cacheable tool's
// call up in its pipeline (loop/resultcache.go) and the store keeps the results; here
// each plugin's and MCP server's tool gets the policy its manifest declares, with the
// identity that invalidates it (the module's digest and the configuration's hash), and
// the store becomes the agents' ResultCache, traced.

// CachePolicy makes a plugin tool cacheable when its manifest says so (loop.CacheableTool).
func (t *pluginTool) CachePolicy() (loop.CachePolicy, bool) {
	if t.cache == nil {
		return loop.CachePolicy{}, false
	}
	return *t.cache, true
}

// CachePolicy makes an MCP server's tool cacheable when its manifest says so.
func (t *mcpTool) CachePolicy() (loop.CachePolicy, bool) {
	if t.cache == nil {
		return loop.CachePolicy{}, false
	}
	return *t.cache, true
}

// cacheTableFor is the cache table covering one tool of a plugin: its own
// [[plugins.tools]] entry's, else the plugin's when its tools list names it.
func cacheTableFor(p manifest.PluginConfig, tool string) *manifest.CacheConfig {
	for _, d := range p.Tools {
		if d.Name == tool && d.Cache != nil {
			return d.Cache
		}
	}
	if p.Cache.Covers(tool) {
		return p.Cache
	}
	return nil
}

func policyOf(c *manifest.CacheConfig, identity string) *loop.CachePolicy {
	if c == nil {
		return nil
	}
	return &loop.CachePolicy{TTL: time.Duration(c.TTL), Scope: c.Scope, Identity: identity}
}

// hashJSON is the sha256 (hex) of v's JSON.
func hashJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// applyCachePolicies gives each plugin tool and MCP server tool of tools its manifest's
// cache policy. A plugin's or server's cache.tools naming a tool it does not offer is an
// error at the key, like any other name the manifest gets wrong.
func (h *Host) applyCachePolicies(tools []loop.Tool) error {
	plugins := map[string]int{}
	for i, p := range h.Manifest.Plugins {
		plugins[p.Name] = i
	}
	servers := map[string]int{}
	for i, s := range h.Manifest.MCPServers {
		servers[s.Name] = i
	}
	offered := map[string][]string{} // owner → its tools' own names
	for _, t := range tools {
		switch t := t.(type) {
		case *pluginTool:
			i, ok := plugins[t.plugin.Name()]
			if !ok {
				continue
			}
			p := h.Manifest.Plugins[i]
			offered[p.Name] = append(offered[p.Name], t.tool)
			t.cache = policyOf(cacheTableFor(p, t.tool), "plugin\x00"+t.plugin.Digest()+"\x00"+t.plugin.ConfigDigest()+"\x00"+hashJSON(p))
		case *mcpTool:
			i, ok := servers[t.server.Name()]
			if !ok {
				continue
			}
			s := h.Manifest.MCPServers[i]
			offered[s.Name] = append(offered[s.Name], t.tool.Name)
			if s.Cache.Covers(t.tool.Name) {
				t.cache = policyOf(s.Cache, "mcp\x00"+hashJSON(s))
			}
		}
	}
	for i, p := range h.Manifest.Plugins {
		if err := h.checkCacheTools(fmt.Sprintf("plugins.%d.cache.tools", i), p.Cache, offered[p.Name]); err != nil && p.Kind == "tool" {
			return err
		}
	}
	for i, s := range h.Manifest.MCPServers {
		if err := h.checkCacheTools(fmt.Sprintf("mcp_servers.%d.cache.tools", i), s.Cache, offered[s.Name]); err != nil {
			return err
		}
	}
	return nil
}

func (h *Host) checkCacheTools(key string, c *manifest.CacheConfig, offered []string) error {
	if c == nil {
		return nil
	}
	for _, name := range c.Tools {
		if name != "*" && !slices.Contains(offered, name) {
			return h.Manifest.ErrorAt(key, "no tool %q to cache (its tools: %v)", name, offered)
		}
	}
	return nil
}

// wireCache gives an agent's configuration the tool-result cache, its prompt_cache and
// Options.Clock,
// the clock runs read: what a cached result's age and expiry are measured by (default:
// the wall clock; a program that simulates time, and tests, set it).
func (h *Host) wireCache(cfg *loop.Config, a manifest.AgentConfig) {
	cfg.ResultCache, cfg.PromptCache = h.resultCache(), a.PromptCache
	if h.opts.Clock != nil {
		cfg.Driver = clockDriver{now: h.opts.Clock}
	}
}

// resultCache is the agents' tool-result cache: the store's, when it keeps one (SQLite
// and PostgreSQL do; a memory store does not), traced.
func (h *Host) resultCache() loop.ResultCache {
	rc, ok := h.Store.(loop.ResultCache)
	if !ok {
		return nil
	}
	return tracedCache{rc}
}

// tracedCache marks each hit in the run's trace and metrics (telemetry.CacheHit).
type tracedCache struct{ loop.ResultCache }

func (c tracedCache) GetResult(ctx context.Context, key string, now time.Time) (loop.CachedResult, bool, error) {
	r, ok, err := c.ResultCache.GetResult(ctx, key, now)
	if ok {
		telemetry.CacheHit(ctx, r.Tool, now.Sub(r.Stored))
	}
	return r, ok, err
}

// userResults is a store that erases a user's cached results (both of ours).
type userResults interface {
	DeleteUserResults(ctx context.Context, user string) (int, error)
}

// clockDriver is the loop's GoDriver with Options.Clock for its clock.
type clockDriver struct {
	loop.GoDriver
	now func() time.Time
}

func (d clockDriver) Now() time.Time { return d.now() }
