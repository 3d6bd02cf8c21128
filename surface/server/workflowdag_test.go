package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wideWorkflow is a DAG of 18 steps in 6 columns with many edges that skip columns and
// cross over; one step has a long id.
func wideWorkflow() string {
	var b strings.Builder
	b.WriteString("\n[workflows.wide]\ndescription = \"many steps, many long edges\"\n")
	sizes := []int{3, 4, 4, 3, 3, 1}
	var layers [][]string
	for l, n := range sizes {
		var ids []string
		for j := 0; j < n; j++ {
			id := fmt.Sprintf("s%d_%d", l, j)
			if l == 2 && j == 1 {
				id = "a_very_long_step_identifier_that_keeps_going"
			}
			ids = append(ids, id)
			var deps []string
			if l > 0 {
				deps = append(deps, layers[l-1][j%len(layers[l-1])])
			}
			if l > 1 && (j+l)%2 == 0 {
				deps = append(deps, layers[l-2][(j+1)%len(layers[l-2])])
			}
			if l > 2 && j == 0 {
				deps = append(deps, layers[l-3][len(layers[l-3])-1])
			}
			if l == 5 {
				deps = append(deps, layers[0][0], layers[1][3])
			}
			fmt.Fprintf(&b, "[[workflows.wide.steps]]\nid = %q\ntool = \"calc\"\narguments = { expression = \"1\" }\ndepends_on = [%s]\n", id, quoteAll(deps))
		}
		layers = append(layers, ids)
	}
	return b.String()
}

func quoteAll(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

// wideHarness measures the wide DAG fitted at 1280×800, then shows the measure is not
// vacuous: zoomed in, boxes fall outside; a probe line drawn across a box is caught. It
// also zooms with the wheel and pans with a drag.
const wideHarness = `<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:1280px;height:800px"></iframe>
<script>
` + dagGeometryJS + `
const f = document.getElementById("f");
f.src = "/" + location.hash;
function waitFor(cond, then) { const t = () => { let ok = false; try { ok = cond(); } catch (e) {} ok ? then() : setTimeout(t, 50); }; t(); }
f.onload = () => {
  const d = f.contentDocument, $ = (id) => d.getElementById(id), B = d.body.dataset, win = f.contentWindow;
  waitFor(() => B.workflow === "wide/" && d.querySelectorAll(".wf-node").length === 18, () => {
    const out = { fitted: geometry(d, win), fit: $("wf-box").dataset.zoom };
    for (let i = 0; i < 4; i++) $("wf-zoom-in").click();
    out.zoomedIn = geometry(d, win);
    $("wf-fit").click();
    const view = d.querySelector(".wf-view"), r = $("wf-box").getBoundingClientRect();
    $("wf-box").dispatchEvent(new win.WheelEvent("wheel", { deltaY: -300, clientX: r.left + 100, clientY: r.top + 100, bubbles: true, cancelable: true }));
    out.wheel = $("wf-box").dataset.zoom;
    const before = view.getAttribute("transform"), svgEl = d.querySelector(".wf-dag");
    svgEl.dispatchEvent(new win.PointerEvent("pointerdown", { pointerId: 7, clientX: r.left + 5, clientY: r.top + 5, bubbles: true }));
    $("wf-box").dispatchEvent(new win.PointerEvent("pointermove", { pointerId: 7, clientX: r.left + 65, clientY: r.top + 45, bubbles: true }));
    $("wf-box").dispatchEvent(new win.PointerEvent("pointerup", { pointerId: 7, bubbles: true }));
    out.panned = [before, view.getAttribute("transform")];
    $("wf-fit").click();
    const n = d.querySelector('.wf-node[data-step="s2_0"]'), t = /translate\(([-\d.]+),([-\d.]+)\)/.exec(n.getAttribute("transform"));
    const x = Number(t[1]), y = Number(t[2]) + 23, probe = d.createElementNS("http://www.w3.org/2000/svg", "path");
    probe.setAttribute("d", "M" + (x - 20) + "," + y + " L" + (x + 170) + "," + y); probe.setAttribute("class", "wf-edge");
    probe.dataset.from = "probe"; probe.dataset.to = "probe"; view.appendChild(probe);
    out.probed = geometry(d, win);
    fetch("/harness-result", { method: "POST", body: JSON.stringify(out) });
  });
};
</script></body></html>`

// A wide DAG (18 steps, 6 columns, edges skipping up to four columns) is fitted to the
// page at 1280×800 with every box inside the canvas and no edge through a box; the
// measure catches a cut box (zoomed in) and an edge through a box (a probe line), and
// the wheel zooms and a drag pans.
func TestConsoleDAGOfAWideWorkflowFitsAndNoEdgeCrossesABox(t *testing.T) {
	dir := t.TempDir()
	manifest := writeManifest(t, dir, `{"turns": []}`, "", false)
	f, _ := os.OpenFile(manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprint(f, wideWorkflow())
	f.Close()
	srv, _ := serveHost(t, manifest, "tok")
	ts, results := serveHarness(t, srv, "/wide-harness", wideHarness, 1)
	out := runHarness(t, results, ts.URL+"/wide-harness#token=tok&workflow=wide")
	var got struct {
		Fitted, ZoomedIn, Probed shipGeometry
		Fit, Wheel               string
		Panned                   []string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("harness result %q: %v", out, err)
	}
	g := got.Fitted
	if len(g.Outside) > 0 || len(g.Hits) > 0 || g.Boxes != 18 || g.Window[0] != 1280 || g.Window[1] != 800 {
		t.Fatalf("fitted: %+v", g)
	}
	if g.Edges < 25 {
		t.Fatalf("only %d edges drawn", g.Edges)
	}
	if len(got.ZoomedIn.Outside) == 0 {
		t.Errorf("zoomed in, no box is outside the canvas: the measure would not see a cut column (%+v)", got.ZoomedIn)
	}
	if strings.Join(got.Probed.Hits, ",") != "probe>probe through s2_0" {
		t.Errorf("the probe across s2_0 was seen as %v", got.Probed.Hits)
	}
	if !(got.Wheel > got.Fit) || len(got.Panned) != 2 || got.Panned[0] == got.Panned[1] {
		t.Errorf("wheel: %s → %s; drag: %v", got.Fit, got.Wheel, got.Panned)
	}
	shot := filepath.Join(screenshotsDir(t), "workflow-wide-dag.png")
	chromium(t, "--screenshot="+shot, "--window-size=1280,800", ts.URL+"/#token=tok&workflow=wide")
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}
