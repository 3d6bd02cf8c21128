package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
)

// cacheHost is a directory with a copy of the probe module (its runs tool counts its
// executions in its KV) and a SQLite store, opened with a clock the test moves.
type cacheHost struct {
	t    *testing.T
	dir  string
	mu   sync.Mutex
	now  time.Time
	conf string // the plugin's permissions.config table
}

func newCacheHost(t *testing.T) *cacheHost {
	probePlugin(t, "", "") // builds it
	c := &cacheHost{t: t, dir: t.TempDir(), now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), conf: `{ a = "1" }`}
	b, err := os.ReadFile(probe.path)
	if err != nil {
		t.Fatal(err)
	}
	c.write("probe.wasm", string(b))
	c.write("script.json", `{"per_session": true, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "runs", "arguments": "{\"q\":\"x\"}"}]},
	  {"text": "{{result c1}}"}]}`)
	return c
}

func (c *cacheHost) write(name, body string) {
	if err := os.WriteFile(filepath.Join(c.dir, name), []byte(body), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cacheHost) clock() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *cacheHost) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// open opens the host as the manifest stands now.
func (c *cacheHost) open() *Host {
	c.t.Helper()
	c.write("agent.toml", fmt.Sprintf(`[agent]
provider = "scripted"
model = "m1"
[providers.scripted]
command = %q
options = { script = "script.json" }
[store]
path = "s.db"

[[plugins]]
name = "probe"
wasm = "probe.wasm"
cache = { ttl = "10m", scope = "user", tools = ["runs"] }
[plugins.permissions]
kv = true
config = %s
`, scriptedBin, c.conf))
	h, err := Open(context.Background(), Options{Manifest: filepath.Join(c.dir, "agent.toml"), CacheDir: wasmCache, Clock: c.clock})
	if err != nil {
		c.t.Fatal(err)
	}
	return h
}

// run runs one turn for user on a new session and returns the final answer and the
// runs call's tool_result.
func (c *cacheHost) run(h *Host, user, session string) (string, loop.ToolResultData) {
	c.t.Helper()
	var got loop.ToolResultData
	res, err := h.Agent.RunWith(context.Background(), loop.RunInput{SessionID: session, User: user,
		Messages: []loop.Message{loop.UserMessage("count")}}, func(e loop.Event) {
		if d, ok := e.Data.(*loop.ToolResultData); ok {
			got = *d
		}
	})
	if err != nil || res.Status != loop.StatusCompleted {
		c.t.Fatalf("run %s: %v %+v", session, err, res)
	}
	return res.Final.Text(), got
}

// The must-shows of the tool-result cache, with a real Wasm tool that counts its runs in
// its KV and a real SQLite store: two runs of one user run it once; another user's run
// misses; the TTL ends a result by the host's clock; a rebuilt module and a changed
// configuration miss; erasing the user erases their results.
func TestToolCache_ACachedWasmToolRunsOncePerUserUntilItsModuleConfigOrTTLChanges(t *testing.T) {
	c := newCacheHost(t)
	h := c.open()
	step := func(user, session, want string, cached bool) {
		t.Helper()
		final, tr := c.run(h, user, session)
		if final != want || tr.Cached != cached {
			t.Fatalf("%s/%s: final %q cached %v (%+v), want %q cached %v", user, session, final, tr.Cached, tr, want, cached)
		}
	}
	step("ann", "s1", `run #1 for {"q":"x"}`, false)
	c.advance(4 * time.Second)
	step("ann", "s2", `run #1 for {"q":"x"}`, true) // another run of hers: the tool did not run
	if _, tr := c.run(h, "ann", "s2b"); tr.CacheAgeMS != 4000 {
		t.Fatalf("age %d ms, want 4000", tr.CacheAgeMS)
	}
	step("bob", "s3", `run #2 for {"q":"x"}`, false) // another user misses
	c.advance(10*time.Minute - 4*time.Second)
	step("ann", "s4", `run #3 for {"q":"x"}`, false) // at the TTL: expired
	step("ann", "s5", `run #3 for {"q":"x"}`, true)
	h.Close()

	// Rebuilt: the same module with one more custom section, so other bytes.
	b, _ := os.ReadFile(filepath.Join(c.dir, "probe.wasm"))
	c.write("probe.wasm", string(append(b, 0x00, 0x07, 0x05, 'r', 'e', 'b', 'l', 'd', 'x')))
	h = c.open()
	step("ann", "s6", `run #4 for {"q":"x"}`, false)
	step("ann", "s7", `run #4 for {"q":"x"}`, true)
	h.Close()

	c.conf = `{ a = "2" }` // a changed configuration
	h = c.open()
	defer h.Close()
	step("ann", "s8", `run #5 for {"q":"x"}`, false)
	step("ann", "s9", `run #5 for {"q":"x"}`, true)

	if _, err := h.EraseUser(context.Background(), "ann", "test", false); err != nil { // her sessions, and with them her results
		t.Fatal(err)
	}
	step("ann", "s10", `run #6 for {"q":"x"}`, false)
}

// A plugin's cache.tools naming a tool it does not offer refuses the host at that key.
func TestToolCache_ACacheTableNamingAnUnknownToolRefusesTheHost(t *testing.T) {
	c := newCacheHost(t)
	body := fmt.Sprintf(`[agent]
provider = "scripted"
[providers.scripted]
command = %q
options = { script = "script.json" }
[[plugins]]
name = "probe"
wasm = "probe.wasm"
cache = { ttl = "10m", scope = "user", tools = ["rns"] }
`, scriptedBin)
	c.write("agent.toml", body)
	_, err := Open(context.Background(), Options{Manifest: filepath.Join(c.dir, "agent.toml"), CacheDir: wasmCache})
	if err == nil || !strings.Contains(err.Error(), `plugins[0].cache.tools: no tool "rns" to cache`) {
		t.Fatalf("err = %v", err)
	}
}
