package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// [redact] (the built-in PII guardrail) redacts the prompt before the model sees it and
// before it is stored: the SQLite file holds no trace of the address or the card, the
// model got "[email]" and "[card]" (its fixture expects them), and the final answer is
// redacted too. A kind the guardrail does not know is a manifest error naming the key.
func TestE2E_RedactKeepsPIIOutOfTheModelAndTheStore(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [
	  {"expect": {"contains": "write to [email] about card [card]"}, "text": "Done; call +44 20 7946 0958 if needed."}]}`})
	f, _ := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\n[redact]\nkinds = [\"email\", \"card\", \"phone\"]\n")
	f.Close()
	r := e.agenthost(t, "run", "--json", "please write to ada.lovelace@example.com about card 4111 1111 1111 1111")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, `"text":"Done; call [phone] if needed."`) {
		t.Fatalf("the final answer was not redacted:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, `"type":"guardrail"`) || !strings.Contains(r.stdout, `"reason":"redacted 1 email, 1 card"`) {
		t.Fatalf("no guardrail event for the redaction:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "ada.lovelace@example.com") || strings.Contains(r.stdout, "4111 1111 1111 1111") {
		t.Fatalf("the run's events carry the raw prompt:\n%s", r.stdout)
	}
	files, _ := filepath.Glob(filepath.Join(e.dir, "sessions.db*"))
	if len(files) == 0 {
		t.Fatal("no database file")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// The model's own answer too: the "store" stage redacts every stored entry.
		for _, raw := range []string{"ada.lovelace@example.com", "4111 1111 1111 1111", "7946 0958"} {
			if bytes.Contains(b, []byte(raw)) {
				t.Fatalf("%s holds %q", filepath.Base(p), raw)
			}
		}
	}

	// Without the "store" stage the model's answer is stored as it came (rule L4).
	b := strings.Replace(string(must(os.ReadFile(e.manifest))), `kinds = ["email", "card", "phone"]`, `kinds = ["email", "card", "phone"]`+"\nstages = [\"input\", \"output\"]", 1)
	os.WriteFile(e.manifest, []byte(b), 0o644)
	if r := e.agenthost(t, "run", "--json", "please write to ada.lovelace@example.com about card 4111 1111 1111 1111"); r.code != 0 {
		t.Fatalf("second run: exit %d\n%s", r.code, r.stderr)
	}
	if !dbHolds(t, e.dir, "7946 0958") {
		t.Fatal("without the store stage the model's answer is not in the file: the check above proves nothing")
	}

	b = strings.Replace(string(must(os.ReadFile(e.manifest))), `kinds = ["email", "card", "phone"]`, `kinds = ["email", "ssn"]`, 1)
	os.WriteFile(e.manifest, []byte(b), 0o644)
	if r := e.agenthost(t, "plugins", "list"); r.code != 2 || !strings.Contains(r.stderr, `redact.kinds`) || !strings.Contains(r.stderr, `unknown kind "ssn"`) {
		t.Fatalf("unknown kind: exit %d %s", r.code, r.stderr)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
