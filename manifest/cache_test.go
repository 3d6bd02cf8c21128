package manifest

import (
	"strings"
	"testing"
	"time"
)

func TestCacheTablesDecodeOnAToolAPluginAndAServer(t *testing.T) {
	body := strings.Replace(goodManifest, `name = "count_words"`, "name = \"count_words\"\ncache = { ttl = \"10m\", scope = \"user\" }", 1) +
		"\n[[mcp_servers]]\nname = \"remote\"\nurl = \"http://127.0.0.1:1/mcp\"\ncache = { ttl = \"1h\", scope = \"global\", tools = [\"*\"] }\n"
	body = strings.Replace(body, "max_iterations = 7", "max_iterations = 7\nprompt_cache = true", 1)
	m, err := Load(writeManifest(t, body))
	if err != nil {
		t.Fatal(err)
	}
	c := m.Plugins[1].Tools[1].Cache
	if c == nil || time.Duration(c.TTL) != 10*time.Minute || c.Scope != "user" || m.Plugins[1].Tools[0].Cache != nil {
		t.Fatalf("tool cache: %+v", c)
	}
	if s := m.MCPServers[0].Cache; !s.Covers("anything") || s.Scope != "global" {
		t.Fatalf("server cache: %+v", s)
	}
	if !m.Agent.PromptCache {
		t.Fatal("prompt_cache not decoded")
	}
}

func TestCacheTableErrorsNameTheKey(t *testing.T) {
	tool := `name = "count_words"`
	wantManifestError(t, [2]string{tool, tool + "\ncache = { scope = \"user\" }"}, 39, "plugins[1].tools[1].cache.ttl", "needs a ttl > 0")
	wantManifestError(t, [2]string{tool, tool + "\ncache = { ttl = \"1m\", scope = \"everyone\" }"}, 39, "plugins[1].tools[1].cache.scope", `scope "everyone"`)
	wantManifestError(t, [2]string{tool, tool + "\ncache = { ttl = \"1m\", scope = \"user\", tools = [\"x\"] }"}, 39, "plugins[1].tools[1].cache.tools", "a tool's own cache table")
	wantManifestError(t, [2]string{`wasm = "calc.wasm"` + "\n[plugins.permissions]", `wasm = "calc.wasm"` + "\ncache = { ttl = \"1m\", scope = \"user\" }\n[plugins.permissions]"},
		23, "plugins[0].cache.tools", "name the tools it covers")
}
