package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/store"
)

// syncBuffer is a log destination the server's goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The SQLite file deleted under a running server (issue 29): runs used to "complete"
// into the unlinked file, nothing was logged, and a restart found nothing. Now a run is
// refused with 503 and Retry-After, and the log says why.
func TestRunAfterTheDatabaseFileIsDeletedIs503WithRetryAfterAndLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := store.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var log syncBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	st.SetLogger(logger)
	e := newTestEnv(t, envOptions{store: st, log: logger}, turn{text: "stored"})

	if code, body := e.request(t, "POST", "/v1/runs", runBody("s1", "r1", "hi")); code != http.StatusOK || !strings.Contains(body, "RUN_FINISHED") {
		t.Fatalf("first run: %d %s", code, body)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	for _, thread := range []string{"s1", "s2"} { // a stored session and a new one
		resp := e.do(t, "POST", "/v1/runs", runBody(thread, "r2", "hi"), "")
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			!strings.Contains(body.String(), "deleted or replaced") {
			t.Fatalf("run on %s after the delete: %d Retry-After %q %s", thread, resp.StatusCode, resp.Header.Get("Retry-After"), body.String())
		}
	}
	for _, want := range []string{"session store: refusing reads and writes", "session store unavailable", path + " no longer exists"} {
		if !strings.Contains(log.String(), want) {
			t.Fatalf("the log lacks %q:\n%s", want, log.String())
		}
	}
}
