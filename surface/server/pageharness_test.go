package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// serveHarness serves srv with a test page at path (GET) on the same origin, and what the
// page posts to /harness-result on the channel returned (buffered by n). The server is
// drained and closed when the test ends, after any cleanup registered later.
func serveHarness(t *testing.T, srv *Server, path, page string, n int) (*httptest.Server, <-chan string) {
	t.Helper()
	results := make(chan string, n)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	})
	mux.HandleFunc("POST /harness-result", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		results <- string(b)
	})
	mux.Handle("/", srv)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Drain(ctx)
		ts.Close()
	})
	return ts, results
}
