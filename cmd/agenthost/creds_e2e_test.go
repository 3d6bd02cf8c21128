package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// peopleAuth is a loopback authorization server (authorization code with PKCE) at which
// people sign in: the "browser" says who signs in (as), and each sign-in gets tokens of
// its own, remembered with their person.
type peopleAuth struct {
	srv        *httptest.Server
	as         atomic.Value // who the next sign-in is
	mu         sync.Mutex
	challenges map[string]string // code → PKCE challenge
	codeUser   map[string]string // code → person
	owner      map[string]string // access token → person
	secrets    []string          // every access and refresh token issued
}

func newPeopleAuth(t *testing.T) *peopleAuth {
	a := &peopleAuth{challenges: map[string]string{}, codeUser: map[string]string{}, owner: map[string]string{}}
	random := func(p string) string { b := make([]byte, 12); rand.Read(b); return p + hex.EncodeToString(b) }
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch r.URL.Path {
		case "/authorize":
			if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "agenthost" || q.Get("resource") == "" {
				http.Error(w, "bad authorize request: "+r.URL.RawQuery, 400)
				return
			}
			code := random("code-")
			a.mu.Lock()
			a.challenges[code], a.codeUser[code] = q.Get("code_challenge"), a.as.Load().(string)
			a.mu.Unlock()
			http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
		case "/token":
			_ = r.ParseForm()
			code := r.Form.Get("code")
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			a.mu.Lock()
			defer a.mu.Unlock()
			who, ok := a.codeUser[code]
			if r.Form.Get("grant_type") != "authorization_code" || !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != a.challenges[code] {
				w.WriteHeader(400)
				fmt.Fprint(w, `{"error":"invalid_grant"}`)
				return
			}
			delete(a.codeUser, code) // a code is used once
			access, refresh := random("at-"+who+"-"), random("rt-"+who+"-")
			a.owner[access] = who
			a.secrets = append(a.secrets, access, refresh)
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"access_token": access, "refresh_token": refresh, "token_type": "Bearer", "expires_in": 3600})
		}
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// whoamiServer is an MCP server over Streamable HTTP behind bearer tokens of a: its tool
// whoami answers whose token the call came with; calls lists them in order.
func whoamiServer(t *testing.T, a *peopleAuth, calls *[]string, mu *sync.Mutex) *httptest.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Whose account this is"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		who := req.Extra.TokenInfo.UserID
		mu.Lock()
		*calls = append(*calls, who)
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + who}}}, nil, nil
	})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		who, ok := a.owner[token]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: who, Expiration: time.Now().Add(time.Hour)}, nil
	}
	h := auth.RequireBearerToken(verify, nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// Two users call one MCP server (auth = "per_user") each with their own token: ana signs
// in at the CLI (mcp login --user), bo's first run is interrupted with an input-required
// request carrying the login link, bo signs in through the served host's link, and the
// resumed run goes on as bo. The server sees each call with its user's token; no token is
// in the store's file, the audit log, the session export or the traces.
func TestE2E_PerUserMCPTokensAreEachUsersOwnAndNeverStoredInClear(t *testing.T) {
	a := newPeopleAuth(t)
	var mu sync.Mutex
	var calls []string
	remote := whoamiServer(t, a, &calls, &mu)
	recv := newOTLPReceiver(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"stories": [{"when": "who am i", "turns": [
	  {"tool_calls": [{"id": "c1", "name": "whoami", "arguments": "{}"}]},
	  {"text": "{{result c1}}"}]}]}`})
	key := e.agenthost(t, "store", "keygen")
	if err := os.WriteFile(filepath.Join(e.dir, "store.key"), []byte(key.stdout), 0o600); err != nil || key.code != 0 {
		t.Fatalf("keygen: %v %s", err, key.stderr)
	}
	b, _ := os.ReadFile(e.manifest)
	m := strings.Replace(string(b), `path = "sessions.db"`, `path = "sessions.db"`+"\nkey_file = \"store.key\"", 1)
	m += fmt.Sprintf("\n[[mcp_servers]]\nname = \"tracker\"\nurl = %q\nauth = \"per_user\"\noauth = { authorize_url = %q, token_url = %q, client_id = \"agenthost\" }\n",
		remote.URL, a.srv.URL+"/authorize", a.srv.URL+"/token")
	os.WriteFile(e.manifest, []byte(m), 0o644)
	tok := map[string]string{}
	for _, u := range []string{"ana", "bo"} {
		r := e.agenthost(t, "users", "add", u)
		if r.code != 0 {
			t.Fatalf("users add %s: %d %s", u, r.code, r.stderr)
		}
		tok[u] = strings.TrimSpace(r.stdout)
	}
	if r := e.agenthost(t, "run", "who am i"); r.code == 0 || !strings.Contains(r.stderr, "no user has signed in to this per-user server yet") {
		t.Fatalf("before any sign-in: %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "mcp", "login", "tracker"); r.code == 0 || !strings.Contains(r.stderr, "name the user with --user") {
		t.Fatalf("login without a user: %d %s", r.code, r.stderr)
	}
	a.as.Store("ana")
	cliLogin(t, e, a.srv.URL+"/authorize?", "mcp", "login", "tracker", "--user", "ana")

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.srv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	s := e.serve(t)
	code, body := call(t, s, tok["ana"], "POST", "/v1/runs", runBody("a1", "r1", "who am i"))
	if code != 200 || !strings.Contains(body, "you are ana") {
		t.Fatalf("ana's run: %d %s", code, body)
	}
	code, body = call(t, s, tok["bo"], "POST", "/v1/runs", runBody("b1", "r1", "who am i"))
	if code != 200 || !strings.Contains(body, `"reason":"input_required"`) || !strings.Contains(body, "/v1/mcp/servers/tracker/connect") || strings.Contains(body, "you are") {
		t.Fatalf("bo's first run is not asked to connect: %d %s", code, body)
	}
	if code, _ := call(t, s, "", "GET", "/v1/mcp/servers/tracker/connect", ""); code != 401 {
		t.Fatalf("connect without a token: %d", code)
	}
	if code, body := call(t, s, tok["bo"], "GET", "/v1/mcp/servers/nosuch/connect", ""); code != 404 {
		t.Fatalf("connect to no per-user server: %d %s", code, body)
	}
	code, body = call(t, s, tok["bo"], "GET", "/v1/mcp/servers/tracker/connect", "")
	var link struct{ URL string }
	if code != 200 || json.Unmarshal([]byte(body), &link) != nil || !strings.HasPrefix(link.URL, a.srv.URL+"/authorize?") {
		t.Fatalf("connect: %d %s", code, body)
	}
	a.as.Store("bo")
	resp, err := http.Get(link.URL) // the browser: sign in as bo, back to the served host's callback
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "Connected to tracker") {
		t.Fatalf("callback: %d %s", resp.StatusCode, page)
	}
	// The redirect is good once: replayed (or forged), it signs no one in.
	if resp, err := http.Get(resp.Request.URL.String()); err != nil || resp.StatusCode != 403 {
		t.Fatalf("a replayed callback: %v %v", resp, err)
	}
	code, body = call(t, s, tok["bo"], "POST", "/v1/runs", `{"threadId":"b1","runId":"r2","messages":[],"resume":[{"interruptId":"c1","status":"resolved","payload":{"approved":true}}]}`)
	if code != 200 || !strings.Contains(body, "you are bo") {
		t.Fatalf("bo's resumed run: %d %s", code, body)
	}
	if code, body = call(t, s, tok["ana"], "POST", "/v1/runs", runBody("a2", "r1", "who am i")); code != 200 || !strings.Contains(body, "you are ana") {
		t.Fatalf("ana's second run: %d %s", code, body)
	}
	mu.Lock()
	got := strings.Join(calls, ",")
	mu.Unlock()
	if got != "ana,bo,ana" {
		t.Fatalf("the server saw calls as %q, want ana,bo,ana", got)
	}

	// No token anywhere but the authorization server and the MCP server.
	a.mu.Lock()
	secrets := append([]string(nil), a.secrets...)
	a.mu.Unlock()
	if len(secrets) != 4 {
		t.Fatalf("%d tokens issued, want ana's and bo's (access and refresh)", len(secrets))
	}
	var exports []string
	for _, sess := range []string{"a1", "b1", "a2"} {
		r := e.agenthost(t, "sessions", "show", sess, "--json")
		if r.code != 0 {
			t.Fatalf("export %s: %s", sess, r.stderr)
		}
		exports = append(exports, r.stdout)
	}
	audit := e.agenthost(t, "audit", "list", "--json")
	if !strings.Contains(audit.stdout, `"mcp.connect"`) || strings.Count(audit.stdout, `"mcp:tracker"`) != 2 {
		t.Fatalf("the audit log does not record both sign-ins: %s", audit.stdout)
	}
	spans := recv.allJSON(t, "execute_tool whoami", 3)
	for _, secret := range secrets {
		for name, text := range map[string]string{"export": strings.Join(exports, "\n"), "audit log": audit.stdout, "traces": spans, "serve's log": s.log()} {
			if strings.Contains(text, secret) {
				t.Fatalf("a token is in the %s", name)
			}
		}
		if dbHolds(t, e.dir, secret) {
			t.Fatal("a token is in the store's file")
		}
	}
}

// cliLogin runs a sign-in command, follows the URL it prints (starting with prefix) as a
// browser would, and waits for it to succeed.
func cliLogin(t *testing.T, e *agentEnv, prefix string, args ...string) {
	t.Helper()
	login := exec.Command(filepath.Join(binDir, "agenthost"), append([]string{"-c", e.manifest}, args...)...)
	login.Dir = e.dir
	stderr, _ := login.StderrPipe()
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	defer login.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var authURL string
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			authURL = sc.Text()
			break
		}
	}
	if authURL == "" {
		t.Fatalf("%v printed no authorization URL", args)
	}
	resp, err := http.Get(authURL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("browser: %v %v", resp, err)
	}
	resp.Body.Close()
	rest, _ := io.ReadAll(stderr)
	if err := login.Wait(); err != nil {
		t.Fatalf("%v: %v %s", args, err, rest)
	}
}
