package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// With no terminal to ask on, an approval that finds stdin closed is not the user's "no":
// the run stops with exit 2 and says to use --approve, and the tool neither runs nor is
// reported to the model as rejected.
func TestE2E_ApprovalWithStdinClosedIsUsageErrorNamingApprove(t *testing.T) {
	e := newEnv(t, "", `require_approval = ["calc"]`, [2]string{"scripted", `{"turns": [
	  {"tool_calls": [{"id": "a1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"text": "should not be reached: {{result a1}}"}]}`})
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "--json", "go")
	cmd.Dir = e.dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdin.Close() // end of input before any question
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2\nstderr: %s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "--approve all") || !strings.Contains(errb.String(), "calc needs approval") {
		t.Fatalf("stderr lacks the --approve hint: %s", errb.String())
	}
	s := strings.Join(shape(events(t, out.String())), "\n")
	if strings.Contains(s, "tool_result") || strings.Contains(s, "rejected by the user") || strings.Contains(s, "final:") {
		t.Fatalf("the call was answered without an answer:\n%s", s)
	}
}
