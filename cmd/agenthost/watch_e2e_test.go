package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// serve --watch: a rebuilt .wasm is loaded between runs, by the same server process.
func TestE2E_ServeWatchSwapsARebuiltPluginWithoutRestarting(t *testing.T) {
	dir := t.TempDir()
	wasm := filepath.Join(dir, "p.wasm")
	put := func(from string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(wasm+".tmp", b, 0o644)
		os.Rename(wasm+".tmp", wasm) // as a build tool writes its output
	}
	put(calcWasm)
	script := `{"per_session": false, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]}, {"text": "calc: {{result c1}}"},
	  {"tool_calls": [{"id": "c2", "name": "chatty", "arguments": "{\"steps\":0}"}]}, {"text": "chatty: {{result c2}}"}]}`
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(script), 0o644)
	manifest := fmt.Sprintf("[agent]\nprovider = \"scripted\"\n[providers.scripted]\ncommand = %q\noptions = { script = \"s.json\" }\n"+
		"[store]\nkind = \"memory\"\n[[plugins]]\nname = \"p\"\nwasm = \"p.wasm\"\n", filepath.Join(binDir, "agenthost-provider-scripted"))
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(manifest), 0o644)
	e := &agentEnv{dir: dir, manifest: filepath.Join(dir, "agent.toml")}
	s := e.serve(t, "--watch")

	body := func(thread string) string {
		resp := s.postRun(t, thread, "r-"+thread, "go")
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if out := body("t1"); !strings.Contains(out, `calc: 42`) {
		t.Fatalf("run 1:\n%s", out)
	}
	pid := s.cmd.Process.Pid
	put(authorPlugins(t)["chatty"])
	deadline := time.Now().Add(readyBound) // a bound against a hang, not a speed check
	for !strings.Contains(s.log(), "watch: reloaded [p]") {
		if time.Now().After(deadline) {
			t.Fatalf("no reload:\n%s", s.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out := body("t2"); !strings.Contains(out, `chatty: said everything`) {
		t.Fatalf("run 2 after the rebuild:\n%s", out)
	}
	if s.cmd.Process.Pid != pid {
		t.Fatal("the server was restarted")
	}
	// A broken build is reported and the running plugin stays.
	os.WriteFile(wasm, []byte("\x00asm broken"), 0o644)
	for !strings.Contains(s.log(), "watch: kept the running plugins") {
		if time.Now().After(deadline) {
			t.Fatalf("the broken build was not reported:\n%s", s.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// run --watch runs the prompt again, on the rebuilt plugin, until Ctrl-C.
func TestE2E_RunWatchRunsThePromptAgainOnARebuiltPlugin(t *testing.T) {
	dir := t.TempDir()
	wasm := filepath.Join(dir, "p.wasm")
	b, _ := os.ReadFile(calcWasm)
	os.WriteFile(wasm, b, 0o644)
	script := `{"per_session": false, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]}, {"text": "calc: {{result c1}}"},
	  {"tool_calls": [{"id": "c2", "name": "chatty", "arguments": "{\"steps\":0}"}]}, {"text": "chatty: {{result c2}}"}]}`
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(script), 0o644)
	manifest := fmt.Sprintf("[agent]\nprovider = \"scripted\"\n[providers.scripted]\ncommand = %q\noptions = { script = \"s.json\" }\n"+
		"[store]\nkind = \"memory\"\n[[plugins]]\nname = \"p\"\nwasm = \"p.wasm\"\n", filepath.Join(binDir, "agenthost-provider-scripted"))
	os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(manifest), 0o644)

	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", filepath.Join(dir, "agent.toml"), "run", "--watch", "go")
	cmd.Dir = dir
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor := func(what string, buf *syncBuffer) {
		t.Helper()
		deadline := time.Now().Add(readyBound) // a bound against a hang
		for !strings.Contains(buf.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q:\nstdout %s\nstderr %s", what, out.String(), errb.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("calc: 42", &out)
	waitFor("watching the plugins", &errb)
	chatty, _ := os.ReadFile(authorPlugins(t)["chatty"])
	os.WriteFile(wasm, chatty, 0o644)
	waitFor("reloaded p", &errb)
	waitFor("chatty: said everything", &out)
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Ctrl-C while watching: %v\n%s", err, errb.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a process writing while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
