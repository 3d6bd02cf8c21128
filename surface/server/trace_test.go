package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/memory"
)

// traceHarness loads the page on a stored run's trace (#trace=RUN), then reads every bar
// of the timeline, clicks the tool call's bar and reads its details, zooms in, filters the
// raw events to tool results, gives the run a thumbs-up and opens the insights page; it
// posts what it saw as JSON to /harness-result.
const traceHarness = `<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:1200px;height:800px"></iframe>
<script>
const f = document.getElementById("f");
f.src = "/" + location.hash;
function waitFor(cond, then) { const t = () => { let ok = false; try { ok = cond(); } catch (e) {} ok ? then() : setTimeout(t, 50); }; t(); }
f.onload = () => {
  const d = f.contentDocument, $ = (id) => d.getElementById(id), out = {};
  waitFor(() => d.body.dataset.trace && d.querySelectorAll(".trace-bar").length > 0, () => {
    out.bars = [...d.querySelectorAll(".trace-bar")].map((b) => ({ kind: b.dataset.kind, start: Number(b.dataset.startMs), dur: Number(b.dataset.durMs), id: b.dataset.id || "", width: b.style.width }));
    d.querySelector(".trace-bar.k-tool").parentNode.parentNode.click();
    out.detail = $("trace-detail").textContent;
    const before = d.querySelector(".trace-track").style.width;
    $("zoom-in").click();
    out.zoom = [before, d.querySelector(".trace-track").style.width, $("trace-box").dataset.zoom];
    d.querySelector(".raw-link").click();
    waitFor(() => d.querySelector(".raw-filter"), () => {
      const sel = d.querySelector(".raw-filter");
      sel.value = "tool_result"; sel.dispatchEvent(new Event("change"));
      out.raw = d.querySelector(".raw-events").textContent;
      d.querySelector("button.thumb").click();
      waitFor(() => d.querySelector("button.thumb.chosen"), () => {
        $("show-insights").click();
        waitFor(() => d.body.dataset.insights === "shown", () => {
          out.insights = $("insights").textContent;
          out.whoami = $("whoami").textContent;
          $("show-memory").click();
          waitFor(() => d.querySelector(".memory-user"), () => {
            d.querySelector(".memory-user").value = "ana";
            d.querySelector("#memory .bar button").click();
            waitFor(() => d.body.dataset.memory === "2", () => {
              out.memory = [...d.querySelectorAll(".memory-entry .text")].map((x) => x.textContent);
              d.querySelector(".memory-entry .forget").click();
              waitFor(() => d.querySelectorAll(".memory-entry").length === 1, () => {
                fetch("/harness-result", { method: "POST", body: JSON.stringify(out) });
              });
            });
          });
        });
      });
    });
  });
};
</script></body></html>`

// The console's trace view draws a stored run as a timeline whose bars are the stored
// durations: the run from run_started to run_finished, the tool call from step_start to
// step_complete, each model call ending at its usage event. A bar's details, zoom, the
// raw events' filter, a thumbs-up (stored as feedback) and the insights page all work in
// a real browser. A screenshot of the view is saved as a test artifact.
func TestConsoleTraceViewMatchesTheStoredRun(t *testing.T) {
	e, results := pageEnv(t)
	mem, ok := e.store.(memory.Store)
	if !ok {
		t.Fatalf("the page env's store %T keeps no memories", e.store)
	}
	for i, text := range []string{"Ana's flat is in Lisbon", "Ana likes green tea"} {
		m, _ := memory.New("ana", "", memory.KindFact, text, time.Now().Add(time.Duration(i)*time.Second))
		if err := mem.AddMemory(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	var got struct {
		Bars []struct {
			Kind       string
			Start, Dur int64
			ID, Width  string
		}
		Detail, Raw, Insights, Whoami string
		Zoom, Memory                  []string
	}
	res := runHarness(t, results, e.ts.URL+"/trace-harness#token=page-token&session=earlier&trace=r0")
	if err := json.Unmarshal([]byte(res), &got); err != nil {
		t.Fatalf("harness result %q: %v", res, err)
	}
	// What the store says.
	entries, err := e.store.Load(context.Background(), "earlier")
	if err != nil {
		t.Fatal(err)
	}
	var evs []loop.Event
	for _, en := range entries {
		if en.Kind == loop.EntryEvent && en.Event.RunID == "r0" {
			evs = append(evs, *en.Event)
		}
	}
	ms := func(at time.Time) int64 { return at.UnixMilli() - evs[0].Time.UnixMilli() }
	var want []string
	var toolStart int64
	for _, ev := range evs {
		switch ev.Type {
		case loop.EventRunFinished:
			want = append([]string{"run 0 " + strconv.FormatInt(ms(ev.Time), 10)}, want...)
		case loop.EventStepStart:
			toolStart = ms(ev.Time)
		case loop.EventStepComplete:
			want = append(want, "tool "+strconv.FormatInt(toolStart, 10)+" "+strconv.FormatInt(ms(ev.Time)-toolStart, 10))
		}
	}
	var bars []string
	models := 0
	for _, b := range got.Bars {
		switch b.Kind {
		case "model":
			models++
		case "run", "tool":
			bars = append(bars, b.Kind+" "+strconv.FormatInt(b.Start, 10)+" "+strconv.FormatInt(b.Dur, 10))
		}
	}
	if strings.Join(bars, "|") != strings.Join(want, "|") || models != 2 {
		t.Fatalf("bars %v (%d model calls)\nwant %v and 2 model calls\nall: %+v", bars, models, want, got.Bars)
	}
	if !strings.Contains(got.Detail, "add · starts at ") || !strings.Contains(got.Detail, `"type": "tool_result"`) {
		t.Errorf("the tool bar's details: %q", got.Detail)
	}
	if len(got.Zoom) != 3 || got.Zoom[0] != "calc(100% - 248px)" || got.Zoom[1] != "calc(200% - 248px)" || got.Zoom[2] != "2" {
		t.Errorf("zoom: %v", got.Zoom)
	}
	if !strings.Contains(got.Raw, `"type": "tool_result"`) || strings.Contains(got.Raw, `"type": "usage"`) {
		t.Errorf("filtered raw events: %q", got.Raw)
	}
	if !strings.Contains(got.Insights, "1 run") && !strings.Contains(got.Insights, "2 runs") {
		t.Errorf("insights: %q", got.Insights)
	}
	if len(got.Memory) != 2 || got.Memory[0] != "Ana likes green tea" {
		t.Errorf("memory panel: %q", got.Memory)
	}
	if left, _ := mem.ListMemory(context.Background(), memory.Filter{User: "ana"}); len(left) != 1 || left[0].Text != "Ana's flat is in Lisbon" {
		t.Errorf("after forget in the console, ana has %+v", left)
	}
	fb, err := e.store.(loop.FeedbackStore).Feedback(context.Background(), time.Time{})
	if err != nil || len(fb) != 1 || fb[0].SessionID != "earlier" || fb[0].RunID != "r0" || fb[0].Score != 1 {
		t.Fatalf("feedback stored: %+v %v", fb, err)
	}
	// The view as a person sees it, kept for whoever reads the test's output.
	dir := os.Getenv("AGENTHOST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	shot := filepath.Join(dir, "console-trace.png")
	chromium(t, "--window-size=1200,800", "--screenshot="+shot, e.ts.URL+"/#token=page-token&session=earlier&trace=r0")
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}
