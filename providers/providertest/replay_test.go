package providertest

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeRecording(t *testing.T, dir, name, raw string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The server answers with the selected recording as it is (status, headers, body) and
// keeps each request's path, headers and body.
func TestReplayAnswersWithTheRecordingAndKeepsTheRequest(t *testing.T) {
	dir := t.TempDir()
	writeRecording(t, dir, "ok.http", "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Type: application/json\r\n\r\n{\"error\":\"slow down\"}")
	r := NewReplay(t, dir)
	r.Use("ok.http")
	resp, err := http.Post(r.URL+"/v1/x", "application/json", strings.NewReader(`{"q":1}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || string(body) != `{"error":"slow down"}` {
		t.Fatalf("answer %d %v %q", resp.StatusCode, resp.Header, body)
	}
	got := r.Last()
	if got.Path != "/v1/x" || got.Header.Get("Content-Type") != "application/json" || string(got.Body) != `{"q":1}` {
		t.Fatalf("kept %+v", got)
	}
}

// A recording that is missing or is not an HTTP response is a 418 saying why, which no
// adapter takes for an answer of the API.
func TestReplayMissingOrBrokenRecordingIsA418(t *testing.T) {
	dir := t.TempDir()
	writeRecording(t, dir, "broken.http", "not an http response")
	r := NewReplay(t, dir)
	for file, want := range map[string]string{"absent.http": "no such file", "broken.http": "malformed HTTP"} {
		r.Use(file)
		resp, err := http.Get(r.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTeapot || !strings.Contains(string(body), want) {
			t.Fatalf("%s: %d %q", file, resp.StatusCode, body)
		}
	}
}

// cut.http is replayed and then the connection is dropped: the client reads the body
// sent so far and then an unexpected EOF, as after a network cut.
func TestReplayCutDropsTheConnectionAfterTheBody(t *testing.T) {
	dir := t.TempDir()
	writeRecording(t, dir, CutFile, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: one\n\n")
	r := NewReplay(t, dir)
	r.Use(CutFile)
	resp, err := http.Get(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "data: one\n\n" || err != io.ErrUnexpectedEOF {
		t.Fatalf("body %q, err %v", body, err)
	}
}
