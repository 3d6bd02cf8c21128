package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// hostile sends a request built by hand, as a hostile page's browser would send it.
func (e *testEnv) hostile(t *testing.T, method, path, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// noSession fails when the store holds anything for session id.
func noSession(t *testing.T, e *testEnv, id string) {
	t.Helper()
	entries, err := e.store.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("session %q was created (%d entries): the request ran", id, len(entries))
	}
}

func corsHeaders(h http.Header) []string {
	var out []string
	for k := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			out = append(out, k)
		}
	}
	return out
}

// Hole 2 (CSRF): a form-like text/plain POST from another origin, without a token, must
// not start a run.
func TestHole2CSRFTextPlainPostFromForeignOriginStartsNoRun(t *testing.T) {
	e := newTestEnv(t, envOptions{}, addTurns...)
	resp, body := e.hostile(t, "POST", "/v1/runs", runBody("csrf", "r1", "what is 2+40?"),
		map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `cross-origin request from \"http://evil.example\" refused`) {
		t.Fatalf("got %d %s, want 403 naming the origin", resp.StatusCode, body)
	}
	if h := corsHeaders(resp.Header); len(h) != 0 {
		t.Fatalf("refusal carries CORS headers %v", h)
	}
	noSession(t, e, "csrf")
}

// Hole 2: a text/plain POST without Origin (a no-cors request from a browser that omits
// it, or any client) is refused too, with 415.
func TestHole2PostWithoutJSONContentTypeIs415(t *testing.T) {
	e := newTestEnv(t, envOptions{}, addTurns...)
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
		resp, body := e.hostile(t, "POST", "/v1/runs", runBody("csrf", "r1", "what is 2+40?"), map[string]string{"Content-Type": ct})
		if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(body, "POST needs Content-Type: application/json") {
			t.Fatalf("Content-Type %q: got %d %s, want 415", ct, resp.StatusCode, body)
		}
	}
	resp, _ := e.hostile(t, "POST", "/v1/runs/r1/abort", "", map[string]string{"Content-Type": "text/plain"})
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("abort with text/plain: %d, want 415", resp.StatusCode)
	}
	noSession(t, e, "csrf")
	// application/json with a charset parameter is JSON.
	resp, _ = e.hostile(t, "POST", "/v1/runs", runBody("ok", "r2", "what is 2+40?"), map[string]string{"Content-Type": "application/json; charset=utf-8"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("application/json; charset=utf-8: %d", resp.StatusCode)
	}
}

// Hole 2 (DNS rebinding): a page on attacker.example resolved to 127.0.0.1 reads nothing,
// on any route.
func TestHole2ReboundHostReadsNoSession(t *testing.T) {
	e := newTestEnv(t, envOptions{}, addTurns...)
	e.run(t, runBody("secret-session", "r1", "what is 2+40?"))
	for _, path := range []string{"/v1/sessions", "/v1/sessions/secret-session", "/", "/healthz"} {
		resp, body := e.hostile(t, "GET", path, "", map[string]string{"Host": "attacker.example"})
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `host \"attacker.example\" is not a name of this server`) {
			t.Fatalf("GET %s: got %d %s, want 403", path, resp.StatusCode, body)
		}
		if strings.Contains(body, "secret-session") || strings.Contains(body, "42") {
			t.Fatalf("GET %s leaked session data: %s", path, body)
		}
	}
	// Same with the port a rebound page keeps.
	resp, _ := e.hostile(t, "GET", "/v1/sessions", "", map[string]string{"Host": "attacker.example:" + e.port()})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("Host attacker.example:port: %d", resp.StatusCode)
	}
}

func (e *testEnv) port() string { return e.ts.URL[strings.LastIndex(e.ts.URL, ":")+1:] }

// Hole 2: a preflight from an unlisted origin gets no CORS headers, so the browser never
// sends the request.
func TestHole2PreflightFromUnlistedOriginGetsNoCORS(t *testing.T) {
	e := newTestEnv(t, envOptions{allowOrigins: []string{"http://localhost:5173"}})
	resp, _ := e.hostile(t, "OPTIONS", "/v1/runs", "", map[string]string{"Origin": "http://evil.example",
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,authorization"})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("preflight from evil.example: %d, want 403", resp.StatusCode)
	}
	if h := corsHeaders(resp.Header); len(h) != 0 {
		t.Fatalf("preflight from evil.example got CORS headers %v", h)
	}
}

// A token does not lift the checks: a foreign origin with the right token is refused.
func TestHole2ChecksApplyWithToken(t *testing.T) {
	e := newTestEnv(t, envOptions{token: "tok"}, addTurns...)
	resp, _ := e.hostile(t, "POST", "/v1/runs", runBody("s", "r1", "what is 2+40?"),
		map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example", "Authorization": "Bearer tok"})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign origin with token: %d, want 403", resp.StatusCode)
	}
	resp, _ = e.hostile(t, "GET", "/v1/sessions", "", map[string]string{"Host": "attacker.example", "Authorization": "Bearer tok"})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign host with token: %d, want 403", resp.StatusCode)
	}
	noSession(t, e, "s")
}

// A front end on another port, listed with --allow-origin, works: preflight, then the run
// with CORS headers on the answer.
func TestAllowOriginListedOriginWorksWithPreflight(t *testing.T) {
	const origin = "http://localhost:5173"
	e := newTestEnv(t, envOptions{token: "tok", allowOrigins: []string{origin}}, addTurns...)
	resp, _ := e.hostile(t, "OPTIONS", "/v1/runs", "", map[string]string{"Origin": origin,
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"})
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		h.Get("Access-Control-Allow-Headers") != "Authorization, Content-Type, Accept" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, h)
	}
	resp, body := e.hostile(t, "POST", "/v1/runs", runBody("front", "r1", "what is 2+40?"),
		map[string]string{"Content-Type": "application/json", "Origin": origin, "Authorization": "Bearer tok"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(body, `"type":"RUN_FINISHED"`) {
		t.Fatalf("run from listed origin: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = e.hostile(t, "GET", "/v1/sessions", "", map[string]string{"Origin": origin, "Authorization": "Bearer tok"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != origin || !strings.Contains(body, `"front"`) {
		t.Fatalf("sessions from listed origin: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

// The server's own page (Origin equal to the address it was loaded from) works, and gets
// no CORS headers (it needs none).
func TestSameOriginPageWorks(t *testing.T) {
	e := newTestEnv(t, envOptions{}, addTurns...)
	resp, body := e.hostile(t, "POST", "/v1/runs", runBody("page", "r1", "what is 2+40?"),
		map[string]string{"Content-Type": "application/json", "Origin": e.ts.URL})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"type":"RUN_FINISHED"`) {
		t.Fatalf("same-origin run: %d %s", resp.StatusCode, body)
	}
	if h := corsHeaders(resp.Header); len(h) != 0 {
		t.Fatalf("same-origin answer has CORS headers %v", h)
	}
	// localhost:PORT is the same server but another origin than 127.0.0.1:PORT.
	resp, _ = e.hostile(t, "GET", "/v1/sessions", "", map[string]string{"Origin": "http://localhost:" + e.port()})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("Origin localhost:port on Host 127.0.0.1:port: %d, want 403", resp.StatusCode)
	}
	for _, o := range []string{"null", "http://127.0.0.1:" + e.port() + "/x", "https://127.0.0.1:" + e.port()} {
		if resp, _ := e.hostile(t, "GET", "/v1/sessions", "", map[string]string{"Origin": o}); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("Origin %q: %d, want 403", o, resp.StatusCode)
		}
	}
}

// Loopback names with any port pass; --allow-host adds names.
func TestAllowHostNames(t *testing.T) {
	e := newTestEnv(t, envOptions{allowHosts: []string{"agent.internal"}})
	for _, h := range []string{"localhost", "localhost:9", "LOCALHOST:8080", "127.0.0.1", "127.0.0.1:1", "[::1]:8080", "[::1]", "agent.internal", "agent.internal:8080", "Agent.Internal."} {
		if resp, body := e.hostile(t, "GET", "/v1/sessions", "", map[string]string{"Host": h}); resp.StatusCode != http.StatusOK {
			t.Errorf("Host %q: %d %s", h, resp.StatusCode, body)
		}
	}
	for _, h := range []string{"other.internal", "localhost.evil.example", "127.0.0.1.evil.example", "10.0.0.1"} {
		if resp, _ := e.hostile(t, "GET", "/v1/sessions", "", map[string]string{"Host": h}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("Host %q: %d, want 403", h, resp.StatusCode)
		}
	}
}

func TestAllowOriginMustBeAnOrigin(t *testing.T) {
	for _, o := range []string{"localhost:5173", "http://localhost:5173/", "*", "ftp://x"} {
		if _, err := New(Options{Agent: noRunner{}, Store: loop.NewMemoryStore(), AllowOrigins: []string{o}}); err == nil || !strings.Contains(err.Error(), "want scheme://host[:port]") {
			t.Errorf("AllowOrigins %q: err %v", o, err)
		}
	}
}

type noRunner struct{}

func (noRunner) RunWith(context.Context, loop.RunInput, func(loop.Event)) (loop.RunResult, error) {
	return loop.RunResult{}, nil
}
func (noRunner) Abort(string, string) bool { return false }

// Hole 2: another site's <script src> or <img> carries no Origin; the browser's
// Sec-Fetch-Site says where it comes from. A navigation (a link to the page) passes.
func TestHole2CrossSiteSubresourceWithoutOriginRefused(t *testing.T) {
	e := newTestEnv(t, envOptions{}, addTurns...)
	e.run(t, runBody("secret-session", "r1", "what is 2+40?"))
	for _, site := range []string{"cross-site", "same-site"} {
		resp, body := e.hostile(t, "GET", "/v1/sessions", "", map[string]string{"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "script"})
		if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "secret-session") {
			t.Fatalf("%s script GET: %d %s", site, resp.StatusCode, body)
		}
	}
	resp, _ := e.hostile(t, "GET", "/", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("navigation from another site to the page: %d", resp.StatusCode)
	}
	resp, _ = e.hostile(t, "GET", "/v1/sessions", "", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("same-origin fetch: %d", resp.StatusCode)
	}
}

// FuzzGuardHostOrigin: no Host or Origin header makes the guard panic, a Host it accepts
// (with no --allow-host) is a loopback name, and an Origin it accepts (with none listed)
// is http:// + that Host.
func FuzzGuardHostOrigin(f *testing.F) {
	for _, s := range [][2]string{{"localhost:8080", "http://localhost:8080"}, {"[::1]:80", ""}, {"127.0.0.1", "null"},
		{"attacker.example", "http://evil.example"}, {"localhost.evil.example", "http://localhost.evil.example"},
		{"127.0.0.1:8080:1", "http://127.0.0.1:8080/"}, {"[::ffff:127.0.0.1]", "http://user@127.0.0.1"}} {
		f.Add(s[0], s[1])
	}
	s, err := New(Options{Agent: noRunner{}, Store: loop.NewMemoryStore()})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host, origin string) {
		r := httptest.NewRequest("GET", "/healthz", nil)
		r.Host = host
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			return
		}
		h := hostName(host)
		if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
			t.Fatalf("accepted Host %q (%q)", host, h)
		}
		if origin != "" && !strings.EqualFold(origin, "http://"+host) {
			t.Fatalf("accepted Origin %q for Host %q", origin, host)
		}
	})
}
