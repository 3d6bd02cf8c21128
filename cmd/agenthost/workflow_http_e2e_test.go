package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wfTrace renders a workflow stream: STEP_* with the step, CUSTOM with step=status.
func wfTrace(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		switch ev["type"] {
		case "STEP_STARTED", "STEP_FINISHED":
			out = append(out, fmt.Sprintf("%s %v", ev["type"], ev["stepName"]))
		case "CUSTOM":
			v := ev["value"].(map[string]any)
			out = append(out, fmt.Sprintf("CUSTOM %v=%v", v["step"], v["status"]))
		default:
			out = append(out, ev["type"].(string))
		}
	}
	return out
}

func TestE2E_Workflow_HTTPStreamsStepsAndAnApprovalIsResumedOverHTTP(t *testing.T) {
	e := workflowEnv(t, fmt.Sprintf(`
[agent]
provider = "scripted"
model = "demo"
[providers.scripted]
command = %q
options = { script = "note.json" }

[workflows.gated]
[[workflows.gated.steps]]
id = "total"
tool = "calc"
arguments = { expression = "2 * 21" }
[[workflows.gated.steps]]
id = "ok"
approval = "Publish the total ${steps.total.output}?"
[[workflows.gated.steps]]
id = "note"
prompt = "Write one line about ${steps.total.output}."
depends_on = ["ok"]
output = "note"
`, filepath.Join(binDir, "agenthost-provider-scripted")))
	if err := os.WriteFile(filepath.Join(e.dir, "note.json"), []byte(`{"turns": [{"expect": {"contains": "Write one line about 42."}, "text": "42 is the answer."}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := e.serve(t)
	url := s.base + "/v1/workflows/gated/runs"

	run := startSSE(t, post(t, url, `{"runId": "h1", "input": {}}`))
	end := run.until(t, "RUN_FINISHED")
	want := []string{"RUN_STARTED", "STEP_STARTED total", "STEP_FINISHED total", "CUSTOM total=ok", "STEP_STARTED ok", "CUSTOM ok=waiting", "STEP_FINISHED ok", "RUN_FINISHED"}
	if got := wfTrace(run.all); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("first stream\n got %q\nwant %q", got, want)
	}
	oc := end["outcome"].(map[string]any)
	in := oc["interrupts"].([]any)[0].(map[string]any)
	if oc["type"] != "interrupt" || in["id"] != "ok" || in["message"] != "Publish the total 42?" || end["threadId"] != "workflow:gated" || end["runId"] != "h1" {
		t.Fatalf("RUN_FINISHED %v", end)
	}

	// A resume entry with a bad status is refused before anything runs.
	bad := post(t, url, `{"runId": "h1", "resume": [{"interruptId": "ok", "status": "maybe"}]}`)
	b, _ := io.ReadAll(bad.Body)
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `status \"maybe\"`) {
		t.Fatalf("bad resume: %d %s", bad.StatusCode, b)
	}

	// The approval, over HTTP, in AG-UI's resume shape: the run continues where it waited.
	run = startSSE(t, post(t, url, `{"runId": "h1", "resume": [{"interruptId": "ok", "status": "resolved", "payload": {"approved": true}}]}`))
	end = run.until(t, "RUN_FINISHED")
	want = []string{"RUN_STARTED", "STEP_STARTED ok", "STEP_FINISHED ok", "CUSTOM ok=ok", "STEP_STARTED note", "STEP_FINISHED note", "CUSTOM note=ok", "RUN_FINISHED"}
	if got := wfTrace(run.all); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("resumed stream\n got %q\nwant %q", got, want)
	}
	res := end["result"].(map[string]any)
	if res["status"] != "completed" || res["output"].(map[string]any)["note"] != "42 is the answer." {
		t.Fatalf("RUN_FINISHED %v", end)
	}
	if c := toolCallsIn(t, e, "workflow:gated:h1~total"); c["workflow:gated:h1~total"] != 1 {
		t.Fatalf("total ran %d times", c["workflow:gated:h1~total"])
	}

	// Unknown workflow: 404; inputs the schema refuses: 400, nothing streamed.
	for path, body := range map[string]string{"/v1/workflows/nope/runs": `{}`, "/v1/workflows/pipeline/runs": `{"input": {"path": 1}}`} {
		resp := post(t, s.base+path, body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := map[bool]int{true: 404, false: 400}[strings.Contains(path, "nope")]; resp.StatusCode != want {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
}
