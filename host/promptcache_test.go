package host

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/providers/providertest"
)

// [agent] prompt_cache = true reaches the real Anthropic adapter (on a loopback replay of
// the Messages API): the second turn of a session marks the system prompt, the tools and
// the older turns as cache breakpoints; the cached input tokens the API reports are the
// run's usage, priced at cached_prompt_per_mtok.
func TestPromptCacheReachesAnthropicAndCachedTokensAreCountedAndPriced(t *testing.T) {
	bin := testbin.Path(t, testbin.Anthropic)
	r := providertest.NewReplay(t, "../providers/anthropic/testdata")
	r.Use("text.http")
	dir := t.TempDir()
	toml := fmt.Sprintf(`[agent]
system_prompt = "You compute."
provider = "claude"
prompt_cache = true
[agent.pricing]
prompt_per_mtok = 3
completion_per_mtok = 15
cached_prompt_per_mtok = 0.3
[providers.claude]
command = %q
confine = false
options = { base_url = %q, api_key = "sk-ant-test", model = "claude-sonnet-4-5", cache = "off" }
[store]
kind = "memory"
`, bin, r.URL)
	if err := os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := Open(context.Background(), Options{Manifest: filepath.Join(dir, "agent.toml"), CacheDir: wasmCache})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var res loop.RunResult
	for _, q := range []string{"hi", "again"} {
		if res, err = h.Agent.Run(context.Background(), loop.RunInput{SessionID: "s1", Messages: []loop.Message{loop.UserMessage(q)}}); err != nil {
			t.Fatal(err)
		}
	}
	var body struct {
		System []struct {
			CacheControl json.RawMessage `json:"cache_control"`
		}
		Messages []struct {
			Role    string
			Content []struct {
				Text         string
				CacheControl json.RawMessage `json:"cache_control"`
			}
		}
	}
	if err := json.Unmarshal(r.Last().Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.System) != 1 || string(body.System[0].CacheControl) != `{"type":"ephemeral"}` || len(body.Messages) != 3 ||
		string(body.Messages[1].Content[0].CacheControl) != `{"type":"ephemeral"}` || body.Messages[2].Content[0].CacheControl != nil {
		t.Fatalf("request %s", r.Last().Body)
	}
	u := res.Usage
	want := (float64(u.PromptTokens-2048)*3 + 2048*0.3 + float64(u.CompletionTokens)*15) / 1e6
	if u.CacheReadTokens != 2048 || u.CacheWriteTokens != 1500 || math.Abs(u.CostUSD-want) > 1e-12 {
		t.Fatalf("usage %+v, want cost %v", u, want)
	}
}
