package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// The authorization code grant with PKCE: before `mcp login` the server cannot start
// (not signed in); `mcp login` prints the authorization URL, the "browser" (this test)
// follows it back to the loopback redirect, the code is exchanged with the PKCE verifier,
// and the token is stored; a run then uses it, refreshing the expired one (and storing
// the new one, which the next run uses as is).
func TestE2E_MCPLoginWithPKCEThenRunsRefreshTheStoredToken(t *testing.T) {
	var mu sync.Mutex
	challenges := map[string]string{} // code → PKCE challenge
	var refreshed atomic.Int32
	var authBase string
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch r.URL.Path {
		case "/authorize":
			if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "cli" ||
				!strings.HasPrefix(q.Get("redirect_uri"), "http://127.0.0.1:") || q.Get("resource") == "" {
				http.Error(w, "bad authorize request: "+r.URL.RawQuery, 400)
				return
			}
			mu.Lock()
			challenges["code1"] = q.Get("code_challenge")
			mu.Unlock()
			http.Redirect(w, r, q.Get("redirect_uri")+"?code=code1&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
		case "/token":
			_ = r.ParseForm()
			w.Header().Set("Content-Type", "application/json")
			switch r.Form.Get("grant_type") {
			case "authorization_code":
				sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
				mu.Lock()
				ok := base64.RawURLEncoding.EncodeToString(sum[:]) == challenges[r.Form.Get("code")]
				mu.Unlock()
				if !ok {
					w.WriteHeader(400)
					fmt.Fprint(w, `{"error":"invalid_grant"}`)
					return
				}
				fmt.Fprint(w, `{"access_token":"a1","refresh_token":"r1","token_type":"Bearer","expires_in":1}`)
			case "refresh_token":
				refreshed.Add(1)
				fmt.Fprint(w, `{"access_token":"a2","refresh_token":"r2","token_type":"Bearer","expires_in":3600}`)
			}
		}
	}))
	defer auth.Close()
	authBase = auth.URL
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	var seen atomic.Value
	mcp.AddTool(srv, &mcp.Tool{Name: "secret_echo"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "signed in"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		if a != "Bearer a1" && a != "Bearer a2" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		seen.Store(a)
		h.ServeHTTP(w, r)
	}))
	defer remote.Close()
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "c1", "name": "secret_echo", "arguments": "{}"}]},
	  {"text": "{{result c1}}"}]}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"remote\"\nurl = %q\noauth = { authorize_url = %q, token_url = %q, client_id = \"cli\" }\n", remote.URL, authBase+"/authorize", authBase+"/token")
	f.Close()

	if r := e.agenthost(t, "run", "go"); r.code == 0 || !strings.Contains(r.stderr, "not signed in: run `agenthost mcp login remote`") {
		t.Fatalf("before login: %d %s", r.code, r.stderr)
	}
	login := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "mcp", "login", "remote")
	login.Dir = e.dir
	stderr, _ := login.StderrPipe()
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	defer login.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var authURL string
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), authBase+"/authorize?") {
			authURL = sc.Text()
			break
		}
	}
	if authURL == "" {
		t.Fatal("mcp login printed no authorization URL")
	}
	// A forged redirect (another state) is refused, and the login goes on waiting.
	cb, _ := url.Parse(authURL)
	redirect := cb.Query().Get("redirect_uri")
	if resp, err := http.Get(redirect + "?code=code1&state=forged"); err != nil || resp.StatusCode != 400 {
		t.Fatalf("a forged redirect: %v %v", resp, err)
	}
	resp, err := http.Get(authURL) // the browser: sign in, come back to the loopback address
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("browser: %v %v", resp, err)
	}
	go io.Copy(io.Discard, stderr)
	if err := login.Wait(); err != nil {
		t.Fatalf("mcp login: %v", err)
	}
	for i, want := range []int32{1, 1} {
		r := e.agenthost(t, "run", "go")
		if r.code != 0 || !strings.Contains(r.stdout, "signed in") || seen.Load() != "Bearer a2" || refreshed.Load() != want {
			t.Fatalf("run %d: %d (saw %v, %d refreshes)\n%s\n%s", i, r.code, seen.Load(), refreshed.Load(), r.stdout, r.stderr)
		}
	}
}
