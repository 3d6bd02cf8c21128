package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/providers/providertest"
)

// A provider whose model is "${VAR}" with VAR unset is refused by name before it starts,
// rather than sent agent.model (agent.toml's "demo", meant for the scripted provider).
func TestE2E_ProviderModelFromAnUnsetVariableIsRefused(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "never"}]}`})
	appendManifest(t, e.manifest, fmt.Sprintf(`
[providers.real]
command = %q
options = { script = "scripted.json" }
model = "${AGENTHOST_TEST_MODEL_UNSET}"
`, filepath.Join(binDir, "agenthost-provider-scripted")))
	r := e.agenthost(t, "run", "--provider", "real", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, `agent.toml:`) ||
		!strings.Contains(r.stderr, `providers.real.model: AGENTHOST_TEST_MODEL_UNSET is not set: export it`) {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	// The scripted provider, which names no model, still runs with agent.model.
	if r := e.agenthost(t, "run", "hi"); r.code != 0 {
		t.Fatalf("scripted: exit %d\n%s", r.code, r.stderr)
	}
}

// A known model's usage has a cost with no pricing in the manifest (the embedded price
// table: gpt-4o-mini, $0.15 and $0.60 per million tokens), and [agent.pricing] overrides it.
func TestE2E_KnownModelIsPricedWithoutConfiguration(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"gpt", `{"repeat": true, "turns": [{"text": "ok", "usage": {"prompt_tokens": 2000000, "completion_tokens": 1000000}}]}`})
	m := strings.Replace(string(must(os.ReadFile(e.manifest))), `options = { script = "gpt.json" }`, `options = { script = "gpt.json" }`+"\nmodel = \"gpt-4o-mini-2024-07-18\"", 1)
	if err := os.WriteFile(e.manifest, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	cost := func() float64 {
		t.Helper()
		r := e.agenthost(t, "run", "--json", "hi")
		for _, ev := range events(t, r.stdout) {
			if d, ok := ev.Data.(*loop.RunFinishedData); ok {
				return d.Usage.CostUSD
			}
		}
		t.Fatalf("no run_finished: %d\n%s", r.code, r.stderr)
		return 0
	}
	if c := cost(); math.Abs(c-(2*0.15+0.60)) > 1e-9 {
		t.Fatalf("cost %v, want 0.90", c)
	}
	appendManifest(t, e.manifest, "\n[agent.pricing]\nprompt_per_mtok = 1.0\ncompletion_per_mtok = 1.0\n")
	if c := cost(); math.Abs(c-3.0) > 1e-9 {
		t.Fatalf("with [agent.pricing]: cost %v, want 3", c)
	}
}

// The README's command blocks, in order, on this checkout (scripts/walkthrough.sh): setup,
// a real model against a loopback OpenAI-compatible server (the openai adapter's recorded
// answer, replayed), plugins, serve, workflows. It fails on the first block that fails.
func TestE2E_READMEWalkthrough(t *testing.T) {
	srv := providertest.NewReplay(t, filepath.Join(repoRoot, "providers", "openai", "testdata"))
	srv.Use("text.http")
	cmd := exec.Command("bash", "scripts/walkthrough.sh")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL+"/v1", "NO_COLOR=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("walkthrough: %v\n%s", err, out)
	}
}

// A model server that refuses the connection is said once, naming the address and what
// sets it, with the attempt count on the run's failure: not once per attempt and again
// on exit (it was the same line six times). --json keeps every attempt's event.
func TestE2E_RefusedModelConnectionIsSaidOnceWithTheAddressAndTheFix(t *testing.T) {
	addr := refusingAddr(t)
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "never"}]}`})
	appendManifest(t, e.manifest, fmt.Sprintf(`
[providers.openai]
command = %q
model = "m"
options = { base_url = "http://%s/v1", api_key = "k" }
`, testbin.Path(t, testbin.OpenAI), addr))
	r := e.agenthost(t, "run", "--provider", "openai", "hi")
	if r.code != 1 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	want := "! provider: openai: cannot connect to http://" + addr + " (connection refused): start the model server there, " +
		"or set OPENAI_BASE_URL (or the provider's options.base_url) to where it listens, retrying\n" +
		"! provider: model call failed after 4 attempts\n"
	if !strings.Contains(r.stderr, want) || strings.Count(r.stderr, "connection refused") != 1 || strings.Contains(r.stderr, "agenthost:") {
		t.Fatalf("stderr:\n%s\nwant it to hold:\n%s", r.stderr, want)
	}
	r = e.agenthost(t, "run", "--json", "--provider", "openai", "hi")
	if n := strings.Count(r.stdout, `"type":"error"`); n != 5 { // four attempts and the run's failure
		t.Fatalf("--json: %d error events, want 5\n%s", n, r.stdout)
	}
}

// refusingAddr is a loopback address that refuses every connection while the test runs:
// a socket bound to it that never listens holds its port. A port merely closed could be
// taken by another test's server in the meantime, and the dial would then connect.
func refusingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}

// run --meta reaches the model's request: the host passes the run's metadata through the
// provider protocol (Metadata.extra) and the openai adapter puts it in `metadata`.
func TestE2E_RunMetaReachesTheOpenAIRequest(t *testing.T) {
	srv := providertest.NewReplay(t, filepath.Join(repoRoot, "providers", "openai", "testdata"))
	srv.Use("text.http")
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "never"}]}`})
	appendManifest(t, e.manifest, fmt.Sprintf(`
[providers.openai]
command = %q
model = "m"
options = { base_url = "%s/v1", api_key = "k" }
`, testbin.Path(t, testbin.OpenAI), srv.URL))
	if r := e.agenthost(t, "run", "--provider", "openai", "--meta", "team=ai", "--meta", "ticket=T-1", "hi"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var body struct{ Metadata map[string]string }
	if err := json.Unmarshal(srv.Last().Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Metadata) != 2 || body.Metadata["team"] != "ai" || body.Metadata["ticket"] != "T-1" {
		t.Fatalf("request metadata %v\n%s", body.Metadata, srv.Last().Body)
	}
}
