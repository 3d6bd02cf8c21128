package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// get sends GET path to the served binary with the given Host (if any) and Origin.
func (s *served) get(t *testing.T, path, host, origin string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", s.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The binary's --allow-host and --allow-origin reach the guard: listed names and origins
// pass (with CORS headers), others get 403.
func TestE2E_ServeAllowHostAndOriginFlags(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", continueTurn})
	s := e.serve(t, "--allow-host", "agent.lan", "--allow-origin", "http://localhost:5173", "--allow-origin", "http://127.0.0.1:3000")
	if resp, body := s.get(t, "/v1/sessions", "agent.lan:8080", ""); resp.StatusCode != 200 {
		t.Fatalf("--allow-host agent.lan: %d %s", resp.StatusCode, body)
	}
	if resp, body := s.get(t, "/v1/sessions", "attacker.example", ""); resp.StatusCode != 403 || !strings.Contains(body, "--allow-host") {
		t.Fatalf("Host attacker.example: %d %s", resp.StatusCode, body)
	}
	for _, o := range []string{"http://localhost:5173", "http://127.0.0.1:3000"} {
		resp, body := s.get(t, "/v1/sessions", "", o)
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != o {
			t.Fatalf("--allow-origin %s: %d %v %s", o, resp.StatusCode, resp.Header, body)
		}
	}
	if resp, body := s.get(t, "/v1/sessions", "", "http://evil.example"); resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("Origin evil.example: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

func TestE2E_ServeRefusesMalformedAllowOrigin(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", continueTurn})
	r := e.agenthost(t, "serve", "--addr", "127.0.0.1:0", "--allow-origin", "http://localhost:5173/")
	if r.code != 2 || !strings.Contains(r.stderr, `--allow-origin: allowed origin "http://localhost:5173/": want scheme://host[:port]`) {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
}
