package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tool output cut from the context (older than the latest tool round) is read back by
// its handle with read_tool_output, which the run offers once an output is cut: the
// read_file output of a real Wasm plugin, 12000 bytes, shown as its first 2000.
func TestE2E_ACutToolOutputIsReadBackByHandle(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
  {"tool_calls": [{"id": "c1", "name": "read_file", "arguments": "{\"path\": \"/data/big.txt\"}"}]},
  {"tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\": \"1+1\"}"}]},
  {"expect": {"tools": ["calc", "read_file", "list_dir", "read_tool_output"]},
   "tool_calls": [{"id": "c3", "name": "read_tool_output", "arguments": "{\"id\": \"c1\", \"offset\": 2000}"}]},
  {"expect": {"last_role": "tool"}, "text": "read it all"}]}`})
	data := filepath.Join(e.dir, "data") // allowed_paths stay inside the manifest's directory
	os.Mkdir(data, 0o755)
	big := strings.Repeat("A", 2000) + "MIDDLE-MARKER" + strings.Repeat("B", 9987)
	os.WriteFile(filepath.Join(data, "big.txt"), []byte(big), 0o644)
	appendManifest(t, e.manifest, fmt.Sprintf("\n[[plugins]]\nname = \"files\"\nwasm = %q\n[plugins.permissions]\nallowed_paths = { \"ro:data\" = \"/data\" }\n",
		filepath.Join(repoRoot, "plugins/examples/go/files/files.wasm")))
	r := e.agenthost(t, "run", "--json", "read big.txt")
	if r.code != 0 || !strings.Contains(r.stdout, `"text":"read it all"`) {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var got string
	for _, ev := range events(t, r.stdout) {
		if ev.Type == "tool_result" && strings.Contains(string(mustJSON(ev.Data)), `"id":"c3"`) {
			got = string(mustJSON(ev.Data))
		}
	}
	want := `"content":"MIDDLE-MARKER` + strings.Repeat("B", 7987) + `\n[… 2000 more bytes of this output not shown: read_tool_output {\"id\":\"c1\",\"offset\":10000}]"`
	if !strings.Contains(got, want) {
		t.Fatalf("read_tool_output result = %.300s…", got)
	}
}

// A long conversation is summarised by the model into a stored compaction once the input
// passes compact_at of context_window: the third run of a session (a provider per run,
// each run a process) first asks for a summary, then answers from it; the session keeps
// the compaction.
func TestE2E_ALongConversationIsSummarisedAndStored(t *testing.T) {
	long := strings.Repeat("tea ", 100)
	e := newEnv(t, "context_window = 400\ncompact_at = 0.5", "",
		[2]string{"p1", `{"turns": [{"text": "a1"}]}`},
		[2]string{"p2", `{"turns": [{"text": "a2"}]}`},
		[2]string{"p3", `{"turns": [
  {"expect": {"system_contains": "You condense a conversation", "contains": "user: first", "tools": []}, "text": "SUMMARY: the user likes tea"},
  {"expect": {"contains": "third", "messages": 5}, "text": "a3"}]}`})
	for i, p := range []string{"p1", "p2", "p3"} {
		args := []string{"run", "--json", "--provider", p, "--session", "s1"}
		if i == 0 {
			args = append(args, "--new")
		}
		r := e.agenthost(t, append(args, []string{"first", "second", "third"}[i]+" "+long)...)
		if r.code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
		if i == 2 && !strings.Contains(r.stdout, `"type":"context_update","data":{"messages":4,"estimated_tokens":0,"overflow":false,"compacted":2,"summarised":true}`) {
			t.Fatalf("no summarised context_update:\n%s", r.stdout)
		}
	}
	r := e.agenthost(t, "sessions", "show", "s1")
	if r.code != 0 || !strings.Contains(r.stdout, "[compaction: 2 messages replaced]") {
		t.Fatalf("sessions show: %s %s", r.stdout, r.stderr)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
