package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/access"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
)

// pngBytes is a real w×h PNG of one colour.
func pngBytes(t testing.TB, w, h int, c color.Color) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func refOf(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// mediaHost serves a real host (SQLite) with two users, ana and bob, through its door.
func mediaHost(t *testing.T, maxBody int64, extra string) (*host.Host, *testEnv) {
	t.Helper()
	m := writeManifest(t, t.TempDir(), `{"turns": [{"text": "seen"}, {"text": "seen"}, {"text": "seen"}]}`, "", false)
	if extra != "" {
		f, err := os.OpenFile(m, os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString(extra)
			f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	h, err := host.Open(context.Background(), host.Options{Manifest: m, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	users := h.Store.(access.Store)
	for _, u := range []string{"ana", "bob"} {
		if _, err := users.AddUser(context.Background(), access.User{Name: u, Role: access.RoleUser, TokenHash: access.HashToken("ah_" + u)}); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := New(Options{Agent: h.Runner(), Store: h.Store, Door: h.Door(), Access: users, MaxBodyBytes: maxBody})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Drain(ctx)
		ts.Close()
		_ = h.Close()
	})
	return h, &testEnv{srv: srv, ts: ts, store: h.Store, token: "ah_ana"}
}

// mediaRunBody is a RunAgentInput whose user message is text and AG-UI binary parts.
func mediaRunBody(thread, run string, files map[string][]byte) string {
	parts := []map[string]any{{"type": "text", "text": "look"}}
	for name, b := range files {
		parts = append(parts, map[string]any{"type": "binary", "mimeType": "image/png", "filename": name, "data": base64.StdEncoding.EncodeToString(b)})
	}
	body, _ := json.Marshal(map[string]any{"threadId": thread, "runId": run, "messages": []any{
		map[string]any{"id": "m1", "role": "user", "content": parts}}, "tools": []any{}, "context": []any{}, "state": map[string]any{}, "forwardedProps": map[string]any{}})
	return string(body)
}

type fetched struct {
	code int
	head http.Header
	body []byte
}

func (e *testEnv) fetch(t *testing.T, token, path string) fetched {
	t.Helper()
	resp := e.do(t, "GET", path, "", token)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fetched{resp.StatusCode, resp.Header, b}
}

// GET /v1/sessions/{id}/attachments/{ref} serves the owner the bytes with their sniffed
// type (the client said image/png for all of them), an image inline and anything else
// as a download, never sniffed by the browser and never able to run script; a foreign
// user, an unknown session, another session's ref and a path all get the same 404.
func TestAttachmentRoute_ServesTheOwnerTheSniffedBytesAndEveryMissTheSame404(t *testing.T) {
	_, e := mediaHost(t, 0, "")
	img := pngBytes(t, 4, 4, color.RGBA{R: 200, A: 255})
	page := []byte("<!DOCTYPE html><html><body><script>parent.pwned = 1</script></body></html>")
	svg := []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>parent.pwned = 1</script></svg>`)
	e.run(t, mediaRunBody("s1", "r1", map[string][]byte{"red.png": img, "page.html": page, "draw.svg": svg}))
	other := []byte("%PDF-1.4 another session's file")
	e.run(t, mediaRunBody("s2", "r2", map[string][]byte{"other.pdf": other}))

	for _, c := range []struct {
		name, path, mime, disposition string
		want                          []byte
	}{
		{"png", "/v1/sessions/s1/attachments/" + refOf(img) + "?name=red.png", "image/png", `inline; filename=red.png`, img},
		{"html", "/v1/sessions/s1/attachments/" + refOf(page) + "?name=page.html", "text/html", `attachment; filename=page.html`, page},
		{"svg", "/v1/sessions/s1/attachments/" + refOf(svg), "text/xml", `attachment; filename=` + refOf(svg)[:12], svg},
		{"pdf", "/v1/sessions/s2/attachments/" + refOf(other) + "?name=a%0d%0aSet-Cookie:%20x%2F..%2Fb.pdf", "application/pdf", `attachment; filename="aSet-Cookie: x..b.pdf"`, other},
	} {
		f := e.fetch(t, "ah_ana", c.path)
		if f.code != 200 || !bytes.Equal(f.body, c.want) {
			t.Fatalf("%s: %d %q", c.name, f.code, f.body)
		}
		for k, v := range map[string]string{"Content-Type": c.mime, "Content-Disposition": c.disposition, "X-Content-Type-Options": "nosniff",
			"Content-Security-Policy": "default-src 'none'; sandbox", "Cache-Control": "no-store", "Set-Cookie": ""} {
			if got := f.head.Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q", c.name, k, got, v)
			}
		}
	}

	miss := func(session, ref string) string {
		b, _ := json.Marshal(map[string]string{"error": fmt.Sprintf("no attachment %.12s in session %q", ref, session)})
		return string(b) + "\n"
	}
	for _, c := range []struct{ name, token, session, ref string }{
		{"bob reads ana's session", "ah_bob", "s1", refOf(img)},
		{"an unknown session", "ah_ana", "s9", refOf(img)},
		{"bob's unknown session", "ah_bob", "s9", refOf(img)},
		{"another session's ref", "ah_ana", "s1", refOf(other)},
		{"a ref no session holds", "ah_ana", "s1", refOf([]byte("nothing"))},
		{"a path", "ah_ana", "s1", "..%2F..%2Fsessions.db"},
		{"an uppercase ref", "ah_ana", "s1", fmt.Sprintf("%X", sha256.Sum256(img))},
	} {
		f := e.fetch(t, c.token, "/v1/sessions/"+c.session+"/attachments/"+c.ref)
		ref := c.ref
		if c.name == "a path" {
			ref = "../../sessions.db"
		}
		if f.code != 404 || string(f.body) != miss(c.session, ref) {
			t.Errorf("%s: %d %q, want 404 %q", c.name, f.code, f.body, miss(c.session, ref))
		}
	}
	if f := e.fetch(t, "", "/v1/sessions/s1/attachments/"+refOf(img)); f.code != 401 {
		t.Errorf("no token: %d %q", f.code, f.body)
	}
}

// The largest attachment a part may have (20 MiB) is served whole and intact, a range of
// it too, and one request allocates a bounded multiple of its size: the store's sealed
// copy and the opened one, never a third (measured, TotalAlloc).
func TestAttachmentRoute_ServesTheLargestPartWholeAndInRangesWithBoundedMemory(t *testing.T) {
	_, e := mediaHost(t, 40<<20, "")
	big := make([]byte, loop.DefaultAttachmentPartBytes)
	for i := range big {
		big[i] = byte(i * 7 % 251)
	}
	copy(big, "%PDF-1.7\n")
	e.run(t, mediaRunBody("big", "r1", map[string][]byte{"big.pdf": big}))
	path := "/v1/sessions/big/attachments/" + refOf(big)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp := e.do(t, "GET", path, "", "ah_ana")
	sum := sha256.New()
	n, err := io.Copy(sum, resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	if err != nil || resp.StatusCode != 200 || n != int64(len(big)) || hex.EncodeToString(sum.Sum(nil)) != refOf(big) ||
		resp.Header.Get("Content-Length") != fmt.Sprint(len(big)) || resp.Header.Get("Content-Type") != "application/pdf" {
		t.Fatalf("GET: %d, %d bytes, %v, headers %v", resp.StatusCode, n, err, resp.Header)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("one GET of a %d-byte attachment allocated %d bytes (%.2f×)", len(big), alloc, float64(alloc)/float64(len(big)))
	if alloc > 3*uint64(len(big)) {
		t.Errorf("one GET allocated %d bytes, over 3× the attachment's %d", alloc, len(big))
	}

	req, _ := http.NewRequest("GET", e.ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer ah_ana")
	req.Header.Set("Range", "bytes=10485760-10485775")
	rr, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(rr.Body)
	rr.Body.Close()
	if rr.StatusCode != http.StatusPartialContent || !bytes.Equal(part, big[10485760:10485776]) {
		t.Fatalf("range: %d %x", rr.StatusCode, part)
	}
}

// [attachments] in the manifest bounds what a served run stores: with max_part = 1KiB a
// 2 KiB part is refused before the model is called, naming the part and the limit, and
// nothing of it is stored; a 1 KiB part is taken. max_session bounds the session's sum.
func TestAttachmentLimitsFromTheManifestBoundAServedRun(t *testing.T) {
	_, e := mediaHost(t, 0, "\n[attachments]\nmax_part = \"1KiB\"\nmax_session = \"1536B\"\n")
	two := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("x"), 2048-9)...)
	last := func(evs []map[string]any) string { b := brief(evs); return b[len(b)-1] }
	if got := last(e.run(t, mediaRunBody("s1", "r1", map[string][]byte{"two.pdf": two}))); got != `RUN_ERROR error: input message 1: part 2 (file "two.pdf"): attachment over its limit: 2048 bytes, over the 1024-byte limit per part` {
		t.Errorf("a 2 KiB part: %s", got)
	}
	one := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("y"), 1024-9)...)
	if got := last(e.run(t, mediaRunBody("s1", "r2", map[string][]byte{"one.pdf": one}))); got != "RUN_FINISHED success completed/end_turn" {
		t.Errorf("a 1 KiB part: %s", got)
	}
	other := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("z"), 1024-9)...)
	if got := last(e.run(t, mediaRunBody("s1", "r3", map[string][]byte{"other.pdf": other}))); !strings.HasSuffix(got, "the session's attachments would take 2048 bytes, over its 1536-byte limit") {
		t.Errorf("a second 1 KiB part: %s", got)
	}
	for ref, code := range map[string]int{refOf(two): 404, refOf(one): 200, refOf(other): 404} {
		if f := e.fetch(t, "ah_ana", "/v1/sessions/s1/attachments/"+ref); f.code != code {
			t.Errorf("attachment %.12s: %d, want %d", ref, f.code, code)
		}
	}
}

// A real Wasm guardrail (the media_guard example) refuses a served run's audio part from
// what the host tells it of the part, and the part is not stored; a PDF passes.
func TestAWasmGuardrailRefusesAnAudioPartOfAServedRun(t *testing.T) {
	guard := filepath.Join(repoRoot(t), "plugins/examples/go/media_guard/media_guard.wasm")
	if _, err := os.Stat(guard); err != nil {
		cmd := exec.Command("bash", "scripts/plugins.d/examples.sh", "media_guard")
		cmd.Dir = repoRoot(t)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build media_guard: %v\n%s", err, b)
		}
	}
	_, e := mediaHost(t, 0, fmt.Sprintf("\n[[plugins]]\nname = \"media_guard\"\nkind = \"guardrail\"\nwasm = %q\n[plugins.permissions]\nconfig = { refuse = \"audio\" }\n", guard))
	wav := append([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), make([]byte, 64)...)
	evs := e.run(t, mediaRunBody("s1", "r1", map[string][]byte{"memo.wav": wav}))
	if b := brief(evs); b[len(b)-1] != `RUN_ERROR error: blocked by guardrail "media_guard" at input: audio "memo.wav" (audio/wav) is refused (audio)` {
		t.Fatalf("an audio part: %v", b)
	}
	if f := e.fetch(t, "ah_ana", "/v1/sessions/s1/attachments/"+refOf(wav)); f.code != 404 {
		t.Fatalf("the refused audio was stored: %d", f.code)
	}
	pdf := []byte("%PDF-1.4 fine")
	if b := brief(e.run(t, mediaRunBody("s1", "r2", map[string][]byte{"ok.pdf": pdf}))); b[len(b)-1] != "RUN_FINISHED success completed/end_turn" {
		t.Fatalf("a PDF: %v", b)
	}
	if f := e.fetch(t, "ah_ana", "/v1/sessions/s1/attachments/"+refOf(pdf)); f.code != 200 {
		t.Fatalf("the PDF: %d", f.code)
	}
}
