package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `agenthost serve` offers the console's resource endpoints over the manifest's MCP
// servers: server-everything's documents are listed, one is read as the headed text part a
// message carries, and a run whose message carries it reaches the scripted model with it
// (expect.contains) and completes.
func TestE2E_ServeAttachesAnMCPResourceToAMessage(t *testing.T) {
	dir := npmMCP(t)
	const uri = "demo://resource/static/document/features.md"
	head := "Attached resource " + uri + " (MCP server \"everything\"):\n\n# Everything Server - Features"
	fixture, _ := json.Marshal(map[string]any{"turns": []any{map[string]any{"expect": map[string]any{"contains": head}, "text": "read it"}}})
	e := newEnv(t, "", "", [2]string{"scripted", string(fixture)})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"everything\"\ncommand = [\"node\", %q]\ntools = [\"echo\"]\n",
		filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
	f.Close()
	s := e.serve(t)
	get := func(path string) string {
		resp, err := http.Get(s.base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	if list := get("/v1/mcp/resources"); !strings.Contains(list, `"uri":"`+uri+`"`) {
		t.Fatalf("list: %s", list)
	}
	var read struct{ Parts []json.RawMessage }
	if err := json.Unmarshal([]byte(get("/v1/mcp/resources/read?server=everything&uri="+url.QueryEscape(uri))), &read); err != nil || len(read.Parts) != 1 {
		t.Fatalf("read: %+v %v", read, err)
	}
	content := `[{"type":"text","text":"what does it say?"},` + string(read.Parts[0]) + `]`
	body := `{"threadId":"t1","runId":"r1","messages":[{"id":"m","role":"user","content":` + content + `}]}`
	resp, err := http.Post(s.base+"/v1/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"status":"completed"`) || !strings.Contains(string(b), "read it") {
		t.Fatalf("run: %d %s", resp.StatusCode, b)
	}
}
