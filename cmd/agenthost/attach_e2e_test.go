package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/providers/providertest"
)

// mediaPDF is a PDF with a word that appears nowhere else, to find its bytes on disk.
var mediaPDF = []byte("%PDF-1.4\n1 0 obj<</Title (QUOKKA-7731-ATTACHED)>>endobj\ntrailer<<>>\n%%EOF\n")

// openaiEnv is an agent whose provider is the openai adapter against a loopback replay
// server, model gpt-4o-mini (which takes PDFs).
func openaiEnv(t *testing.T) (*agentEnv, *providertest.Replay) {
	t.Helper()
	srv := providertest.NewReplay(t, filepath.Join(repoRoot, "providers", "openai", "testdata"))
	srv.Use("text.http")
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "never"}]}`})
	appendManifest(t, e.manifest, fmt.Sprintf(`
[providers.openai]
command = %q
model = "gpt-4o-mini"
options = { base_url = "%s/v1", api_key = "k" }
`, testbin.Path(t, testbin.OpenAI), srv.URL))
	return e, srv
}

// run --attach: the PDF reaches the model as a file part (the loopback server sees its
// bytes), the SQLite file holds it once (sealed or not, by hash), and sessions rm erases
// it from the file.
func TestE2E_RunAttachSendsAPDFAndSessionsRmErasesIt(t *testing.T) {
	e, srv := openaiEnv(t)
	pdf := filepath.Join(e.dir, "report.pdf")
	if err := os.WriteFile(pdf, mediaPDF, 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.agenthost(t, "run", "--provider", "openai", "--session", "s-pdf", "--new", "--attach", pdf, "Summarise the report.")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	want := `{"file":{"file_data":"data:application/pdf;base64,` + base64.StdEncoding.EncodeToString(mediaPDF) + `","filename":"report.pdf"},"type":"file"}`
	if body := string(srv.Last().Body); !strings.Contains(body, want) || !strings.Contains(body, `"text":"Summarise the report."`) {
		t.Fatalf("request body:\n%s\nwant it to hold:\n%s", body, want)
	}
	db := filepath.Join(e.dir, "sessions.db")
	if n := countOnDisk(t, db, "QUOKKA-7731-ATTACHED"); n != 1 {
		t.Fatalf("the PDF is in the store %d times, want once (stored by hash, not in the entries)", n)
	}
	if r := e.agenthost(t, "sessions", "rm", "s-pdf"); r.code != 0 {
		t.Fatalf("sessions rm: exit %d\n%s", r.code, r.stderr)
	}
	if n := countOnDisk(t, db, "QUOKKA-7731-ATTACHED"); n != 0 {
		t.Fatalf("after sessions rm the PDF's bytes remain %d times in the SQLite file", n)
	}
}

// A file over the per-part limit, a directory, and a missing file are refused with the
// reason before any model call.
func TestE2E_RunAttachRefusesOversizeAndNonFiles(t *testing.T) {
	e, srv := openaiEnv(t)
	big := filepath.Join(e.dir, "big.pdf")
	if err := os.WriteFile(big, append(append([]byte(nil), mediaPDF...), make([]byte, 20<<20)...), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.agenthost(t, "run", "--provider", "openai", "--attach", big, "hi")
	if r.code != 1 || !strings.Contains(r.stderr, `file "big.pdf"`) || !strings.Contains(r.stderr, "20971520-byte limit per part") {
		t.Fatalf("oversize: exit %d\n%s", r.code, r.stderr)
	}
	for _, bad := range []string{e.dir, filepath.Join(e.dir, "missing.pdf")} {
		if r := e.agenthost(t, "run", "--provider", "openai", "--attach", bad, "hi"); r.code != 2 || !strings.Contains(r.stderr, "--attach "+bad) {
			t.Fatalf("--attach %s: exit %d\n%s", bad, r.code, r.stderr)
		}
	}
	if n := srv.Count(); n != 0 {
		t.Fatalf("the model was called %d times", n)
	}
}

// AG-UI input with a binary part: the PDF's bytes reach the model as a file part (the
// client's mimeType, a lie here, is not trusted: the bytes say PDF), the messages
// snapshot names the attachment by id, and a second run refers to it by that id.
func TestE2E_AGUIBinaryPartReachesTheModel(t *testing.T) {
	e, srv := openaiEnv(t)
	s := e.serve(t, "--provider", "openai")
	data := base64.StdEncoding.EncodeToString(mediaPDF)
	post := func(run, part string) []string {
		body := `{"threadId":"t-pdf","runId":"` + run + `","messages":[{"id":"m-` + run + `","role":"user","content":[` +
			`{"type":"text","text":"Read this."},` + part + `]}]}`
		resp, err := http.Post(s.base+"/v1/runs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("POST /v1/runs: %d %s", resp.StatusCode, b)
		}
		var datas []string
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				datas = append(datas, d)
			}
		}
		return datas
	}
	evs := post("r1", `{"type":"binary","mimeType":"image/png","filename":"q3.pdf","data":"`+data+`"}`)
	want := `{"file":{"file_data":"data:application/pdf;base64,` + data + `","filename":"q3.pdf"},"type":"file"}`
	if body := string(srv.Last().Body); !strings.Contains(body, want) {
		t.Fatalf("request body:\n%s\nwant it to hold:\n%s", body, want)
	}
	for _, d := range evs {
		if strings.Contains(d, data[:40]) {
			t.Fatalf("an event carries the bytes: %s", d)
		}
	}
	if !strings.Contains(strings.Join(evs, "\n"), `"type":"RUN_FINISHED"`) {
		t.Fatalf("the run did not finish: %v", evs)
	}
	// The stored session names the attachment by hash; a second run sends that id.
	sum := sha256Hex(mediaPDF)
	resp, err := http.Get(s.base + "/v1/sessions/t-pdf")
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(stored, []byte(`"attachment":"`+sum+`"`)) || bytes.Contains(stored, []byte(data[:40])) {
		t.Fatalf("stored session:\n%s", stored)
	}
	post("r2", `{"type":"binary","mimeType":"application/pdf","id":"`+sum+`","filename":"again.pdf"}`)
	var last struct{ Messages []json.RawMessage }
	if err := json.Unmarshal(srv.Last().Body, &last); err != nil {
		t.Fatal(err)
	}
	if m := string(last.Messages[len(last.Messages)-1]); !strings.Contains(m, `"file_data":"data:application/pdf;base64,`+data) {
		t.Fatalf("the second run's message: %s", m)
	}
}

// countOnDisk counts word in the database file and its -wal, read raw.
func countOnDisk(t *testing.T, db, word string) int {
	t.Helper()
	n := 0
	for _, f := range []string{db, db + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		n += bytes.Count(b, []byte(word))
	}
	return n
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
