package serve_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/serve"
)

func TestMain(m *testing.M) {
	testbin.ShareWasmCache()
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// openHost opens a manifest with a SQLite store and the scripted provider (a real
// adapter process), whose one answer is "Served from the embedder.".
func openHost(t *testing.T) *host.Host {
	t.Helper()
	dir := t.TempDir()
	script := `{"turns": [{"text": "Served from the embedder."}]}`
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(dir, "agent.toml")
	manifest := fmt.Sprintf("[agent]\nname = \"embedded\"\nprovider = \"scripted\"\nmodel = \"demo\"\n"+
		"[providers.scripted]\ncommand = %q\noptions = { script = \"script.json\" }\n[store]\nkind = \"sqlite\"\npath = \"s.db\"\n",
		testbin.Path(t, testbin.Scripted))
	if err := os.WriteFile(m, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := serve.Open(context.Background(), host.Options{Manifest: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// servedAddr waits for the address Run reports it serves on (its "serving on" line),
// so tests serve on 127.0.0.1:0: a port picked by binding and closing could be taken by
// another process before Run binds it. Run returning first, or no line within a minute
// on a busy machine, fails the test.
func servedAddr(t *testing.T, addrs <-chan string, done <-chan error) string {
	t.Helper()
	select {
	case addr := <-addrs:
		return addr
	case err := <-done:
		t.Fatalf("Run returned before serving: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("Run never reported its address")
	}
	return ""
}

// An embedder serves a host with Run as the command does: the token guards the API, the
// agent's card names it, a run streams the model's answer, and cancelling the context
// stops the server and returns.
func TestRunServesTheHostUntilItsContextEnds(t *testing.T) {
	h := openHost(t)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var lines []string
	done, addrs := make(chan error, 1), make(chan string, 1)
	go func() {
		done <- serve.Run(ctx, h, serve.Config{Addr: "127.0.0.1:0", Token: "admin-secret", Logf: func(f string, a ...any) {
			line := fmt.Sprintf(f, a...)
			mu.Lock()
			lines = append(lines, line)
			mu.Unlock()
			if addr, ok := strings.CutPrefix(line, "serving on http://"); ok {
				addrs <- addr
			}
		}})
	}()
	addr := servedAddr(t, addrs, done)
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for code, _ := get("/healthz", ""); code != 200; code, _ = get("/healthz", "") {
		if time.Now().After(deadline) {
			t.Fatal("the server never answered /healthz")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := get("/v1/whoami", ""); code != http.StatusUnauthorized {
		t.Errorf("whoami without the token: %d, want 401", code)
	}
	if code, body := get("/v1/whoami", "admin-secret"); code != 200 || !strings.Contains(body, `"admin"`) {
		t.Errorf("whoami with the token: %d %s", code, body)
	}
	if code, body := get("/.well-known/agent-card.json", ""); code != 200 || !strings.Contains(body, `"embedded"`) {
		t.Errorf("agent card: %d %s", code, body)
	}
	run := `{"threadId": "t-embedded", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hello"}]}`
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/runs", strings.NewReader(run))
	req.Header.Set("Authorization", "Bearer admin-secret")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(stream), "Served from the embedder.") || !strings.Contains(string(stream), "RUN_FINISHED") {
		t.Errorf("POST /v1/runs: %d\n%s", res.StatusCode, stream)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(lines, "\n"); !strings.Contains(got, "serving on http://"+addr) || !strings.HasSuffix(got, "stopped") {
		t.Errorf("Run's lines:\n%s", got)
	}
}

// A cluster's runs are River jobs in PostgreSQL: any other store is refused by name.
func TestStartClusterRefusesAStoreThatIsNotPostgres(t *testing.T) {
	_, err := serve.StartCluster(context.Background(), openHost(t), 1, 0, nil)
	if !errors.Is(err, serve.ErrNotPostgres) || !strings.Contains(err.Error(), "this manifest's store is sqlite") {
		t.Fatalf("StartCluster on SQLite: %v", err)
	}
}
