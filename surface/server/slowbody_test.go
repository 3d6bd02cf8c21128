package server

import (
	"bufio"
	"io"
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

// stalled sends head (request line and headers, with Content-Length: 1000) and 10 bytes
// of body, stops, and returns the answer; the connection must be closed after it.
func stalled(t *testing.T, e *testEnv, head string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(head + "Content-Length: 1000\r\n\r\n{\"threadId")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%q: no answer: %v", head, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("%q: reading the answer: %v", head, err)
	}
	resp.Body.Close()
	if !resp.Close {
		t.Errorf("%q: answer without Connection: close", head)
	}
	if b, err := br.ReadByte(); err == nil {
		rest, _ := br.Peek(br.Buffered())
		t.Fatalf("%q: connection still open: %d %v %q%q", head, resp.StatusCode, resp.Header, b, rest)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%q: connection neither closed nor answered: %v", head, err)
	}
	return resp
}

// Hole 5, on requests whose body is never read: a refused POST (415, 403, 401) and a GET
// with a body. net/http drains such a body before answering; stalled, it must still end.
func TestHole5StalledBodyOfUnreadRequestEnds(t *testing.T) {
	e := newTestEnv(t, envOptions{token: "tok", bodyTimeout: 200 * time.Millisecond}, addTurns...)
	for head, want := range map[string]int{
		"POST /v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\n":                                      415,
		"POST /v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nOrigin: http://evil.example\r\n": 403,
		"POST /v1/runs HTTP/1.1\r\nHost: attacker.example\r\nContent-Type: application/json\r\n":                         403,
		"POST /v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n":                                401,
		"GET /v1/sessions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer tok\r\n":                                  200,
		"GET /healthz HTTP/1.1\r\nHost: localhost\r\n":                                                                   200,
	} {
		if resp := stalled(t, e, head); resp.StatusCode != want {
			t.Errorf("%q: %d, want %d", head, resp.StatusCode, want)
		}
	}
	if code, body := e.request(t, "GET", "/v1/sessions", ""); code != 200 {
		t.Fatalf("server after stalled bodies: %d %s", code, body)
	}
}
