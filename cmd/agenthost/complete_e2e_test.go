package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// complete asks the binary what the shell would offer (cobra's hidden __complete
// command, which the generated completion scripts call) and returns the candidates
// and the directive line.
func (e *agentEnv) complete(t *testing.T, args ...string) (candidates []string, directive string) {
	t.Helper()
	r := e.agenthost(t, append([]string{"__complete"}, args...)...)
	if r.code != 0 {
		t.Fatalf("__complete %s: exit %d %s", strings.Join(args, " "), r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	directive = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		if l != "" {
			candidates = append(candidates, l)
		}
	}
	return candidates, directive
}

func wantCandidates(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: completion offered %q, want %q", what, got, want)
	}
}

// Completion offers the manifest's names: plugins (and MCP servers) for plugins call and
// inspect, a plugin's tools (listed by the plugin itself when the manifest declares
// none), providers, agents, the tools the model sees, approval modes and the stored
// sessions. A store that does not exist yet is not created by asking.
func TestE2E_CompletionOffersManifestPluginToolProviderAgentAndSessionNames(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "hi"}]}`}, [2]string{"backup", `{"turns": [{"text": "hi"}]}`})
	f, err := os.OpenFile(e.manifest, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(`
[agents.billing]
description = "Answers billing questions."
system_prompt = "You do billing."
`)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}

	c, _ := e.complete(t, "sessions", "show", "")
	wantCandidates(t, "sessions show before any run", c, nil)
	if _, err := os.Stat(filepath.Join(e.dir, "sessions.db")); !os.IsNotExist(err) {
		t.Fatalf("completing session ids created the store: %v", err)
	}

	// Completion gives up after completeTimeout rather than keep a shell waiting; the
	// plugin's first compile can take longer than that on a loaded machine, so the
	// compilation cache is filled first, as any earlier command would have.
	if r := e.agenthost(t, "plugins", "verify"); r.code != 0 {
		t.Fatalf("warm the compilation cache: exit %d %s", r.code, r.stderr)
	}
	c, d := e.complete(t, "plugins", "call", "")
	wantCandidates(t, "plugins call PLUGIN", c, []string{"calc"})
	if d != ":0" { // default: .wasm paths complete too
		t.Fatalf("plugins call PLUGIN directive %s, want :0", d)
	}
	c, d = e.complete(t, "plugins", "call", "calc", "")
	wantCandidates(t, "plugins call calc TOOL", c, []string{"calc"})
	if d != ":4" { // no file completion
		t.Fatalf("plugins call calc TOOL directive %s, want :4", d)
	}
	c, _ = e.complete(t, "plugins", "call", "nosuch", "")
	wantCandidates(t, "plugins call nosuch TOOL", c, nil)
	c, _ = e.complete(t, "plugins", "inspect", "ca")
	wantCandidates(t, "plugins inspect", c, []string{"calc"})
	c, _ = e.complete(t, "run", "--provider", "")
	wantCandidates(t, "run --provider", c, []string{"backup", "scripted"})
	c, _ = e.complete(t, "run", "--provider", "b")
	wantCandidates(t, "run --provider b", c, []string{"backup"})
	c, _ = e.complete(t, "run", "--agent", "")
	wantCandidates(t, "run --agent", c, []string{"billing", "e2e"})
	c, _ = e.complete(t, "run", "--tools", "")
	wantCandidates(t, "run --tools", c, []string{"calc"})
	c, _ = e.complete(t, "run", "--tool-choice", "")
	wantCandidates(t, "run --tool-choice", c, []string{"auto", "calc", "none", "required"})
	c, _ = e.complete(t, "run", "--approve", "")
	wantCandidates(t, "run --approve", c, []string{"all", "ask", "none"})

	if r := e.agenthost(t, "run", "--session", "ses_first", "--new", "hello"); r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	if r := e.agenthost(t, "run", "--session", "ses_second", "--new", "hello"); r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	c, _ = e.complete(t, "sessions", "show", "")
	wantCandidates(t, "sessions show", c, []string{"ses_first", "ses_second"})
	c, _ = e.complete(t, "sessions", "show", "ses_f")
	wantCandidates(t, "sessions show ses_f", c, []string{"ses_first"})
	c, _ = e.complete(t, "sessions", "show", "ses_first", "")
	wantCandidates(t, "sessions show ID (a second argument)", c, nil)
	c, _ = e.complete(t, "sessions", "rm", "ses_first", "")
	wantCandidates(t, "sessions rm ID... (not twice)", c, []string{"ses_second"})
	c, _ = e.complete(t, "run", "--session", "")
	wantCandidates(t, "run --session", c, []string{"ses_first", "ses_second"})
}

// A manifest that does not load completes nothing, quietly: TAB must never print errors
// into the command line or fail.
func TestE2E_CompletionWithABrokenManifestOffersNothing(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "hi"}]}`})
	if err := os.WriteFile(e.manifest, []byte("[agent\nname = "), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"plugins", "call", ""}, {"run", "--provider", ""}, {"sessions", "show", ""}, {"run", "--tools", ""}} {
		c, _ := e.complete(t, args...)
		wantCandidates(t, strings.Join(args, " "), c, nil)
	}
}
