package server

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// holdAfterEnd passes a response through and, the first time a RUN_FINISHED frame has
// been written and flushed to the client, holds the handler until release is closed:
// the moment between a run's last frame and its request's end.
type holdAfterEnd struct {
	http.ResponseWriter
	held    *atomic.Bool // the first request's end only
	ended   *bool
	sent    chan<- struct{}
	release <-chan struct{}
}

func (h holdAfterEnd) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte(`"type":"RUN_FINISHED"`)) {
		*h.ended = true
	}
	return h.ResponseWriter.Write(b)
}

func (h holdAfterEnd) Flush() {
	_ = http.NewResponseController(h.ResponseWriter).Flush()
	if *h.ended && h.held.CompareAndSwap(false, true) {
		close(h.sent)
		<-h.release
	}
}

// A client may start the session's next run as soon as it reads RUN_FINISHED, before the
// first request has ended: the run has let go of the session (the loop, then the
// server's claim) before its last frame is sent. The next run used to be refused with
// 409 ("session already has a run in progress") until the first request returned.
func TestTheNextRunMayStartAsSoonAsRunFinishedIsRead(t *testing.T) {
	sent, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	e := newTestEnv(t, envOptions{wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ended := false // per request
			h.ServeHTTP(holdAfterEnd{ResponseWriter: w, held: &held, ended: &ended, sent: sent, release: release}, r)
		})
	}}, turn{text: "First."}, turn{text: "Second."})
	defer close(release)
	resp := e.do(t, "POST", "/v1/runs", runBody("s1", "r1", "one"), e.token)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for !strings.Contains(sc.Text(), `"type":"RUN_FINISHED"`) {
		if !sc.Scan() {
			t.Fatal("the first stream ended without RUN_FINISHED")
		}
	}
	waitFor(t, "the first request to be held after its end", sent)
	code, body := e.request(t, "POST", "/v1/runs", runBody("s1", "r2", "two"))
	if code != 200 || !strings.Contains(body, `"type":"RUN_FINISHED"`) || !strings.Contains(body, `"status":"completed"`) {
		t.Fatalf("the next run while the first request is still open: %d %s", code, body)
	}
}
