package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// streamingTS streams its result: pieces around a log line, a flood past the call's bound
// on reports, and a lone surrogate (JavaScript holds it, UTF-8 cannot).
const streamingTS = `import { tool, streamResult, log } from "agenthost";

tool({ name: "mixed", handler() {
  streamResult("a");
  log.info("note");
  streamResult("b\n");
  streamResult("c");
  return "abc";
} });

tool({ name: "flood", handler() {
  let all = "";
  for (let i = 0; i < 1500; i++) {
    streamResult(i + ",");
    all += i + ",";
  }
  return all;
} });

tool({ name: "lone", handler() { streamResult("a\uD800b"); return "done"; } });
`

// pluginCallText runs `plugins call` and returns the result's text (stdout, the whole
// CallToolResult) and stderr without the compile notes of a first run.
func pluginCallText(t *testing.T, e *agentEnv, args ...string) (text, stderr string) {
	t.Helper()
	r := e.agenthost(t, append([]string{"plugins", "call"}, args...)...)
	var res struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || len(res.Content) != 1 {
		t.Fatalf("plugins call %v: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
	}
	var kept []string
	for _, line := range strings.SplitAfter(r.stderr, "\n") {
		if !strings.HasPrefix(line, "compiling ") {
			kept = append(kept, line)
		}
	}
	return res.Content[0].Text, strings.Join(kept, "")
}

// `plugins call` prints each piece of the result a tool streams to stderr as it comes
// and as it is (a log line after a piece that ends mid-line starts on its own), while
// stdout stays the whole result: for the text example's regex_extract (Go Wasm,
// sdk.StreamResult) and a TypeScript tool (streamResult). --log-level off prints no
// piece. A flood is cut at the call's bound of 1,000 reports, with the run's warning,
// and its result stays whole; a lone surrogate prints as U+FFFD.
func TestE2E_PluginsCallPrintsAToolsStreamedPiecesToStderr(t *testing.T) {
	if err := jsRuntimeBeside(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "scripts/plugins.d/examples.sh", "text")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the text example: %v\n%s", err, out)
	}
	dir := t.TempDir()
	e := &agentEnv{dir: dir, manifest: filepath.Join(dir, "agent.toml")} // a file by path: the manifest is not read
	ts := filepath.Join(dir, "stream.ts")
	if err := os.WriteFile(ts, []byte(streamingTS), 0o644); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(repoRoot, "plugins/examples/go/text/text.wasm")
	args := `{"text":"a1 b22 c333","pattern":"[0-9]+"}`

	if got, stderr := pluginCallText(t, e, text, "regex_extract", args); got != `["1","22","333"]` || stderr != "1\n22\n333\n" {
		t.Fatalf("regex_extract: result %q, stderr %q", got, stderr)
	}
	if got, stderr := pluginCallText(t, e, text, "regex_extract", args, "--log-level", "off"); got != `["1","22","333"]` || stderr != "" {
		t.Fatalf("regex_extract, --log-level off: result %q, stderr %q", got, stderr)
	}
	if got, stderr := pluginCallText(t, e, ts, "mixed"); got != "abc" || stderr != "a\n[stream] info: note\nb\nc\n" {
		t.Fatalf("mixed: result %q, stderr %q", got, stderr)
	}
	var first, whole strings.Builder
	for i := range 1500 {
		if i < 1000 {
			first.WriteString(strconv.Itoa(i) + ",")
		}
		whole.WriteString(strconv.Itoa(i) + ",")
	}
	got, stderr := pluginCallText(t, e, ts, "flood")
	if want := first.String() + "\n[agenthost] warning: this run reached its limit of plugin reports; further ones are dropped\n"; got != whole.String() || stderr != want {
		t.Fatalf("flood: result %d bytes (want %d), stderr %d bytes:\n%.200s…\n…%s", len(got), whole.Len(), len(stderr), stderr, stderr[max(0, len(stderr)-200):])
	}
	if got, stderr := pluginCallText(t, e, ts, "lone"); got != "done" || stderr != "a\uFFFDb\n" {
		t.Fatalf("lone: result %q, stderr %q", got, stderr)
	}
}
