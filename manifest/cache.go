package manifest

import (
	"fmt"
	"slices"
	"time"
)

// CacheConfig is a tool's opt-in to the tool-result cache (docs/caching.md):
// `cache = { ttl = "10m", scope = "user" }` on a [[plugins.tools]] entry, or on a
// [[plugins]] or [[mcp_servers]] entry with the tools it covers (`tools = ["name"]`, or
// ["*"] for all of them). A tool that no cache table names is never cached.
type CacheConfig struct {
	TTL   Duration `toml:"ttl"`
	Scope string   `toml:"scope"` // session | user | global
	Tools []string `toml:"tools"` // on a plugin or an MCP server: the tools it covers
}

// CacheScopes are the values of CacheConfig.Scope.
var CacheScopes = []string{"session", "user", "global"}

// Covers reports whether the cache table covers the tool (its own name).
func (c *CacheConfig) Covers(tool string) bool {
	return c != nil && (slices.Contains(c.Tools, "*") || slices.Contains(c.Tools, tool))
}

// checkCache checks one cache table at key; onTool says whether it sits on one tool
// (which names no tools) or on a plugin or server (which must).
func (m *Manifest) checkCache(key string, c *CacheConfig, onTool bool) error {
	if c == nil {
		return nil
	}
	if c.TTL <= 0 {
		return m.ErrorAt(key+".ttl", `a cached tool needs a ttl > 0: ttl = "10m"`)
	}
	if time.Duration(c.TTL) > 366*24*time.Hour {
		return m.ErrorAt(key+".ttl", "ttl %s is longer than a year", time.Duration(c.TTL))
	}
	if !slices.Contains(CacheScopes, c.Scope) {
		return m.ErrorAt(key+".scope", "scope %q: want session, user or global (whose calls share results)", c.Scope)
	}
	switch {
	case onTool && len(c.Tools) > 0:
		return m.ErrorAt(key+".tools", "a tool's own cache table covers that tool: tools is for a plugin's or a server's")
	case !onTool && len(c.Tools) == 0:
		return m.ErrorAt(key+".tools", `name the tools it covers: tools = ["name"] (or ["*"]); a tool no cache table names is never cached`)
	}
	return nil
}

// checkCaches checks every cache table of the plugins and MCP servers.
func (m *Manifest) checkCaches() error {
	for i, p := range m.Plugins {
		key := fmt.Sprintf("plugins.%d", i)
		if err := m.checkCache(key+".cache", p.Cache, false); err != nil {
			return err
		}
		perUser := len(p.Permissions.UserSecrets) > 0
		if err := m.checkOwnCredentials(key+".cache", p.Cache, perUser); err != nil {
			return err
		}
		for j, t := range p.Tools {
			if err := m.checkCache(fmt.Sprintf("%s.tools.%d.cache", key, j), t.Cache, true); err != nil {
				return err
			}
			if err := m.checkOwnCredentials(fmt.Sprintf("%s.tools.%d.cache", key, j), t.Cache, perUser); err != nil {
				return err
			}
			if t.Cache != nil && p.Cache.Covers(t.Name) {
				return m.ErrorAt(fmt.Sprintf("%s.tools.%d.cache", key, j), "tool %q has a cache table and is in the plugin's cache.tools: keep one", t.Name)
			}
		}
	}
	for i, s := range m.MCPServers {
		if err := m.checkCache(fmt.Sprintf("mcp_servers.%d.cache", i), s.Cache, false); err != nil {
			return err
		}
		if err := m.checkOwnCredentials(fmt.Sprintf("mcp_servers.%d.cache", i), s.Cache, s.PerUser()); err != nil {
			return err
		}
	}
	return nil
}

// checkOwnCredentials refuses a global cache on a tool that acts with the calling user's
// own credentials (per-user secrets, an MCP server with auth = "per_user"): its result is
// what that user's account answered, and a global entry would hand it to every user.
func (m *Manifest) checkOwnCredentials(key string, c *CacheConfig, perUser bool) error {
	if perUser && c != nil && c.Scope == "global" {
		return m.ErrorAt(key+".scope", "scope \"global\" would share results of calls made with each user's own credentials: use \"user\" or \"session\"")
	}
	return nil
}
