package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// grantsHarness opens the console with the Grants panel (#grants=1) and reports
// "grants\nDOM" once it is listed, with whether anything the page showed ran as script.
const grantsHarness = `<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:1200px;height:800px"></iframe>
<script>
const f = document.getElementById("f");
f.src = "/" + location.hash;
function waitFor(cond, then) { const t = () => { try { if (cond()) return then(); } catch (e) {} setTimeout(t, 50); }; t(); }
f.onload = () => {
  const d = f.contentDocument;
  waitFor(() => d.body.dataset.grants && d.getElementById("whoami").textContent, () => fetch("/harness-result", { method: "POST",
    body: "grants\n" + JSON.stringify({ pwned: d.body.dataset.pwned || "", title: d.title, by: d.querySelector("#grants td.by").textContent }) + "\n" + d.documentElement.outerHTML }));
};
</script></body></html>`

// The Grants panel names a grant's user and its giver by their user names, the id in
// each cell's title, and a name is text however it is written: a user whose name is
// markup, an event handler and quotes sees it as typed, and nothing of it runs. The
// HTTP listing carries the names beside the ids (user_name, by_name).
func TestConsoleGrantsPanelShowsUserNamesAsText(t *testing.T) {
	const name = `<script>document.title="pwned"</script><img src=x onerror="document.body.dataset.pwned=1">"a'b&c`
	ts, h, tok, results := grantEnv(t, name, grantsHarness)
	e := &testEnv{ts: ts, token: tok}
	if typ, ints := finishedOutcome(t, e.run(t, runBody("n-1", "r1", "first"))); typ != "interrupt" || len(ints) != 1 {
		t.Fatalf("the first run: %s %v", typ, ints)
	}
	evs := e.run(t, resumeBody("n-1", "r2", "c1", `{"approved": true, "scope": "user", "hours": 1, "args_hash": "`+loop.ArgsHash(`{"expression":"1+1"}`)+`"}`))
	if typ, _ := finishedOutcome(t, evs); typ != "success" {
		t.Fatalf("resume: %v", brief(evs))
	}
	gs, err := h.Grants(context.Background())
	if err != nil || len(gs) != 1 || gs[0].User == "" || gs[0].By != gs[0].User {
		t.Fatalf("stored grants %+v %v", gs, err)
	}
	id := gs[0].User
	code, body := e.request(t, "GET", "/v1/approvals/grants", "")
	var listed struct {
		Grants []map[string]any `json:"grants"`
	}
	if err := json.Unmarshal([]byte(body), &listed); code != 200 || err != nil || len(listed.Grants) != 1 {
		t.Fatalf("GET grants: %d %s", code, body)
	}
	if g := listed.Grants[0]; g["user"] != id || g["user_name"] != name || g["by"] != id || g["by_name"] != name {
		t.Fatalf("listed grant %v", g)
	}

	proc := startChromium(t, ts.URL+"/grant-harness#token="+tok+"&grants=1")
	res := stage(t, results, "grants")
	stopChromium(proc)
	facts, dom, _ := strings.Cut(res, "\n")
	var seen struct{ Pwned, Title, By string }
	if err := json.Unmarshal([]byte(facts), &seen); err != nil {
		t.Fatal(err)
	}
	if seen.Pwned != "" || seen.Title == "pwned" || seen.By != name {
		t.Fatalf("the name ran or changed: %+v", seen)
	}
	text := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(name) // as a text node serialises
	mustContain(t, "grants", dom,
		`<td class="for" title="`+id+`">user `+text+`</td><td class="by" title="`+id+`">`+text+`</td>`)
	if strings.Contains(dom, `<img src="x"`) || strings.Contains(dom, `<script>document.title`) {
		t.Fatalf("the name became markup:\n%s", dom)
	}
}
