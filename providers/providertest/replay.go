package providertest

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// CutFile is the recording after which the server aborts the connection: the adapter
// sees the stream cut in the middle.
const CutFile = "cut.http"

// Replay is a loopback server answering every request with the recording selected by
// Use, read from its directory. It is safe for concurrent use.
type Replay struct {
	// URL is the server's base URL (http://127.0.0.1:PORT), closed with the test.
	URL string

	t   testing.TB
	dir string

	mu       sync.Mutex
	file     string
	requests []Request
}

// Request is what the server received: the path, the headers and the body.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte
}

// NewReplay starts a server replaying the recordings in dir (usually "testdata").
func NewReplay(t testing.TB, dir string) *Replay {
	r := &Replay{t: t, dir: dir}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Use selects the recording the next requests are answered with.
func (r *Replay) Use(file string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.file = file
}

// Last is the last request received; the test fails when there was none.
func (r *Replay) Last() Request {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.requests) == 0 {
		r.t.Fatal("the server received no request")
	}
	return r.requests[len(r.requests)-1]
}

// Count is how many requests the server received.
func (r *Replay) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requests)
}

// serve answers with the selected recording; a recording that is missing or does not
// parse is a 418 whose body says why, which no adapter mistakes for a real answer.
func (r *Replay) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.requests = append(r.requests, Request{Path: req.URL.Path, Header: req.Header.Clone(), Body: body})
	file := r.file
	r.mu.Unlock()
	f, err := os.Open(filepath.Join(r.dir, file))
	if err != nil {
		http.Error(w, err.Error(), http.StatusTeapot)
		return
	}
	defer f.Close()
	rec, err := http.ReadResponse(bufio.NewReader(f), req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusTeapot)
		return
	}
	for k, vs := range rec.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.StatusCode)
	io.Copy(w, rec.Body)
	w.(http.Flusher).Flush()
	if file == CutFile {
		panic(http.ErrAbortHandler) // drop the connection mid-stream
	}
}
