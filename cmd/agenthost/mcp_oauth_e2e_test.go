package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A remote MCP server behind OAuth (a local authorization server issuing tokens with the
// client credentials grant): the manifest's oauth entry, its secret from the environment,
// gets the token and the agent's call goes through; without the secret the start fails
// naming the variable.
func TestE2E_MCPServerBehindOAuthClientCredentials(t *testing.T) {
	var issued atomic.Int32
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		if id != "agent" || secret != "from-env" || r.FormValue("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("t%d", issued.Add(1)), "token_type": "Bearer", "expires_in": 3600})
	}))
	defer auth.Close()
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "secret_echo"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "behind oauth"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); !strings.HasPrefix(a, "Bearer t") {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer remote.Close()
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "secret_echo", "arguments": "{}"}]},
	  {"text": "{{result c1}}"}]}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"remote\"\nurl = %q\noauth = { token_url = %q, client_id = \"agent\", client_secret_env = \"REMOTE_SECRET\" }\n", remote.URL, auth.URL)
	f.Close()
	t.Setenv("REMOTE_SECRET", "from-env")
	r := e.agenthost(t, "run", "go")
	if r.code != 0 || !strings.Contains(r.stdout, "behind oauth") || issued.Load() != 1 {
		t.Fatalf("run: %d (%d tokens)\n%s\n%s", r.code, issued.Load(), r.stdout, r.stderr)
	}
	os.Unsetenv("REMOTE_SECRET")
	r = e.agenthost(t, "run", "go")
	if r.code == 0 || !strings.Contains(r.stderr, "mcp_servers[0].oauth: oauth: the client secret's variable REMOTE_SECRET is not set") {
		t.Fatalf("without the secret: %d %s", r.code, r.stderr)
	}
}
