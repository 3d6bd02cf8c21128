package server

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Hole 5: a client that sends the headers and part of a body, then stalls (under the
// 256 KiB net/http would drain before answering), gets its answer and loses the
// connection once Options.BodyReadTimeout has passed; the server goes on serving others.
func TestHole5StalledBodyEndsAndServerServesOthers(t *testing.T) {
	e := newTestEnv(t, envOptions{bodyTimeout: 200 * time.Millisecond}, addTurns...)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const part = `{"threadId":"slow","runId":"r1","messages":[`
	if _, err := conn.Write([]byte("POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
		"Content-Length: 100000\r\n\r\n" + part)); err != nil {
		t.Fatal(err)
	}
	// The bound on the client side only keeps a broken server from hanging the test; the
	// server's own bound is 200 ms.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to the stalled body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
		t.Fatalf("stalled body: %d (close %v), want 408 and the connection closed", resp.StatusCode, resp.Close)
	}
	// The server closed the connection: the next read ends (EOF or reset), it does not time out.
	var one [1]byte
	if _, err := conn.Read(one[:]); err == nil {
		t.Fatal("connection still open after 408")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection neither answered nor closed: %v", err)
	}
	if code, body := e.request(t, "GET", "/v1/sessions", ""); code != 200 {
		t.Fatalf("server after a stalled body: %d %s", code, body)
	}
	noSession(t, e, "slow")
}

// Hole 5, the other way to stall: a chunked body that stops sending chunks.
func TestHole5StalledChunkedBodyEnds(t *testing.T) {
	e := newTestEnv(t, envOptions{bodyTimeout: 200 * time.Millisecond}, addTurns...)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST /v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
		"Transfer-Encoding: chunked\r\n\r\n5\r\n{\"thr\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to the stalled chunked body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled chunked body: %d, want 408", resp.StatusCode)
	}
}
