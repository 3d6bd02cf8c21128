package main

import (
	"strings"
	"testing"
)

// The first run on an empty compilation cache says on stderr that it is compiling the
// plugin (seconds of silence otherwise); a second run, served from the cache, does not;
// --json stdout carries events only either way.
func TestE2E_FirstCompileOfAPluginSaysSoOnceOnStderr(t *testing.T) {
	e := newEnv(t, "", "", [2]string{"scripted", `{"turns": [{"text": "one"}, {"text": "two"}]}`})
	const line = "compiling calc.wasm (first run; cached afterwards)"
	cold := e.agenthost(t, "run", "--json", "hello")
	if cold.code != 0 {
		t.Fatalf("cold run: exit %d %s", cold.code, cold.stderr)
	}
	if strings.Count(cold.stderr, line) != 1 {
		t.Fatalf("cold cache: stderr lacks %q once:\n%s", line, cold.stderr)
	}
	events(t, cold.stdout) // every stdout line is an event
	if strings.Contains(cold.stdout, "compiling") {
		t.Fatalf("the progress line reached --json stdout:\n%s", cold.stdout)
	}
	warm := e.agenthost(t, "run", "--json", "hello")
	if warm.code != 0 {
		t.Fatalf("warm run: exit %d %s", warm.code, warm.stderr)
	}
	if strings.Contains(warm.stderr, "compiling") {
		t.Fatalf("warm cache: stderr still says compiling:\n%s", warm.stderr)
	}
}
