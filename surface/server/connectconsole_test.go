package server

import (
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
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/host"
)

// loopAuth is a loopback authorization server (authorization code with PKCE): the
// person signing in is whoever as names; each sign-in gets a token of its own.
type loopAuth struct {
	srv   *httptest.Server
	as    atomic.Value
	mu    sync.Mutex
	codes map[string][2]string // code → PKCE challenge, person
	owner map[string]string    // access token → person
}

func newLoopAuth(t *testing.T) *loopAuth {
	a := &loopAuth{codes: map[string][2]string{}, owner: map[string]string{}}
	random := func(p string) string { b := make([]byte, 12); _, _ = rand.Read(b); return p + hex.EncodeToString(b) }
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch r.URL.Path {
		case "/authorize":
			if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "agenthost" {
				http.Error(w, "bad authorize request", http.StatusBadRequest)
				return
			}
			code := random("code-")
			a.mu.Lock()
			a.codes[code] = [2]string{q.Get("code_challenge"), a.as.Load().(string)}
			a.mu.Unlock()
			http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+q.Get("state"), http.StatusFound)
		case "/token":
			_ = r.ParseForm()
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			a.mu.Lock()
			defer a.mu.Unlock()
			c, ok := a.codes[r.Form.Get("code")]
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != c[0] {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":"invalid_grant"}`)
				return
			}
			delete(a.codes, r.Form.Get("code"))
			tok := random("at-")
			a.owner[tok] = c[1]
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
		}
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// whoamiMCP is an MCP server behind a's tokens whose tool whoami says whose token came.
func whoamiMCP(t *testing.T, a *loopAuth) *httptest.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Whose account this is"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + req.Extra.TokenInfo.UserID}}}, nil, nil
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
	s := httptest.NewServer(auth.RequireBearerToken(verify, nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	t.Cleanup(s.Close)
	return s
}

// connectHarness frames the console as bo: Run stops with the call asking bo to connect
// ("asked"); Connect opens the sign-in in a new window; once the test server says the
// authorization server's redirect reached the host (/harness-connected), Resume runs the
// call again ("resumed"). Reports are "STAGE\nTHREAD\nDOM".
const connectHarness = `<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:1200px;height:800px"></iframe>
<script>
const f = document.getElementById("f");
f.src = "/" + location.hash;
const report = (stage) => fetch("/harness-result", { method: "POST", body: stage + "\n" + f.contentDocument.getElementById("thread").textContent + "\n" + f.contentDocument.documentElement.outerHTML });
function waitFor(cond, then) { const t = async () => { try { if (await cond()) return then(); } catch (e) {} setTimeout(t, 100); }; t(); }
f.onload = () => {
  const d = f.contentDocument, $ = (s) => d.querySelector(s), runs = () => Number(d.body.dataset.runs || 0);
  waitFor(() => $("#sessions").children.length > 0, () => {
    $("#send").click();
    waitFor(() => runs() >= 1 && $(".connect-box .connect"), async () => {
      await report("asked");
      $(".connect-box .connect").click();
      waitFor(async () => d.body.dataset.connect === "opened" && (await fetch("/harness-connected")).status === 200, () => {
        $(".connect-box .resume").click();
        waitFor(() => runs() >= 2, () => report("resumed"));
      });
    });
  });
};
</script></body></html>`

// In the console, a call to a per-user MCP server by a user who has not connected their
// account shows the request with Connect: Connect asks the server for the sign-in link
// (with the console's token) and opens it in a new window, where the authorization
// server sends the browser back to the host's callback; Resume then runs the call with
// the user's own token. Checked in Chromium with a loopback authorization server and a
// real go-sdk MCP server; a screenshot is written for a reviewer.
func TestConsoleConnectsAUsersAccountAndResumes(t *testing.T) {
	a := newLoopAuth(t)
	remote := whoamiMCP(t, a)
	dir := t.TempDir()
	m := writeManifest(t, dir, `{"stories": [{"when": "who am i", "turns": [
	  {"tool_calls": [{"id": "w1", "name": "whoami", "arguments": "{}"}]}, {"text": "{{result w1}}"}]}]}`, "", false)
	f, _ := os.OpenFile(m, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"tracker\"\nurl = %q\nauth = \"per_user\"\noauth = { authorize_url = %q, token_url = %q, client_id = \"agenthost\" }\n",
		remote.URL, a.srv.URL+"/authorize", a.srv.URL+"/token")
	f.Close()
	ctx := context.Background()

	// Someone signs in once at the CLI, so the host knows the server's tools.
	a.as.Store("ana")
	err := host.MCPLoginAs(ctx, m, "tracker", "ana", "", func(u string) {
		go func() {
			if resp, err := http.Get(u); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.Open(ctx, host.Options{Manifest: m, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	tok, err := h.AddUser(ctx, "bo", access.RoleUser, "test")
	if err != nil {
		t.Fatal(err)
	}
	as, _ := h.Access()
	srv, err := New(Options{Agent: h.Runner(), Store: h.Store, Access: as, Door: h.Door()})
	if err != nil {
		t.Fatal(err)
	}

	// The test's own routes beside the server: the harness, its reports, and whether the
	// authorization server's redirect has reached the host's callback and been served.
	results := make(chan string, 4)
	var connected atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("GET /connect-harness", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(connectHarness))
	})
	mux.HandleFunc("POST /harness-result", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		results <- string(b)
	})
	mux.HandleFunc("GET /harness-connected", func(w http.ResponseWriter, _ *http.Request) {
		if !connected.Load() {
			w.WriteHeader(http.StatusAccepted)
		}
	})
	mux.HandleFunc("GET /v1/mcp/oauth/callback", func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r)
		connected.Store(true)
	})
	mux.Handle("/", srv)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Drain(dctx)
		ts.Close()
	})

	a.as.Store("bo")
	proc := startChromium(t, ts.URL+"/connect-harness#token="+tok+"&session=c-1&prompt=who%20am%20i", "--disable-popup-blocking")
	_, dom := grantStage(t, results, "asked")
	mustContain(t, "asked", dom,
		`<div class="tool-card awaiting" data-call-id="w1"><div class="head"><span class="name">whoami</span><span class="state">awaiting connection</span>`,
		`open /v1/mcp/servers/tracker/connect`,
		`<button class="primary connect">Connect</button><button class="resume">Resume</button><button class="decline">Decline</button>`)
	_, dom = grantStage(t, results, "resumed")
	mustContain(t, "resumed", dom,
		`<span class="name">whoami</span><span class="state">done</span>`, `<pre class="result">you are bo</pre>`,
		`<div class="msg assistant">you are bo</div>`, `<span id="status" class="">finished: completed</span>`)
	stopChromium(proc)

	// Over HTTP the interrupt names the link in its metadata; the screenshot is of a
	// session of a user who has not connected yet.
	cy, err := h.AddUser(ctx, "cy", access.RoleUser, "test")
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{ts: ts, token: cy}
	typ, ints := finishedOutcome(t, e.run(t, runBody("c-shot", "r1", "who am i")))
	if md, _ := ints[0]["metadata"].(map[string]any); typ != "interrupt" || len(ints) != 1 || md["connect"] != "/v1/mcp/servers/tracker/connect" {
		t.Fatalf("cy's run: %s %v", typ, ints)
	}
	shoot(t, filepath.Join(screenshotsDir(t), "console-connect.png"), ts.URL+"/#token="+cy+"&session=c-shot")
}
