package server

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testbin"
	"github.com/agenthost/agenthost/loop"
)

// forkScript is one story for the whole process (per_session false): the original run
// calls calc for 6*7 and says the result; a second session asks the same (calc's result
// comes from the cache); the fork, resumed, is answered with the result it is shown.
const forkScript = `{"per_session": false, "turns": [
  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}], "usage": {"prompt_tokens": 50, "completion_tokens": 5, "cost_usd": 0.001}},
  {"expect": {"last_role": "tool"}, "text": "It is {{result c1}}.", "usage": {"prompt_tokens": 60, "completion_tokens": 4, "cost_usd": 0.001}},
  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
  {"expect": {"last_role": "tool"}, "text": "Again {{result c1}}."},
  {"expect": {"last_role": "tool", "messages": 4}, "text": "It is {{result c1}}.", "usage": {"prompt_tokens": 70, "completion_tokens": 4, "cost_usd": 0.002}},
  {"expect": {"last_role": "user", "messages": 2, "contains": "what is 6*8?"}, "text": "You now ask about 6*8."}
]}`

// forkHarness frames the console on session "orig" and: clicks the tool card, "Fork
// from here", tries an edit the door refuses (drop the last user message at a tool
// result) and reads the reason, then replaces the result with 41 and forks ("forked");
// clicks Resume ("resumed"); clicks Compare ("compared"); opens "orig" again, forks from
// its user message with the message edited and resumes that fork ("edited"); opens
// "orig" again and saves
// it as a test case, catching the downloaded zip ("saved"); opens "again" and its
// trace ("trace"). Each report is "STAGE\n" + JSON, posted to /harness-result.
const forkHarness = `<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:1200px;height:800px"></iframe>
<script>
const f = document.getElementById("f");
f.src = "/" + location.hash;
const report = (stage, v) => fetch("/harness-result", { method: "POST", body: stage + "\n" + JSON.stringify(v) });
function waitFor(cond, then) { const t = () => { let ok = false; try { ok = cond(); } catch (e) {} ok ? then() : setTimeout(t, 50); }; t(); }
f.onload = () => {
  const d = f.contentDocument, w = f.contentWindow, $ = (s) => d.querySelector(s), B = d.body.dataset;
  const texts = (sel) => [...d.querySelectorAll(sel)].map((x) => x.textContent);
  const open = (id) => [...d.querySelectorAll("li.session")].find((li) => li.dataset.id === id).click();
  let blob = null;
  const make = w.URL.createObjectURL.bind(w.URL);
  w.URL.createObjectURL = (b) => { blob = b; return make(b); };
  waitFor(() => $('.tool-card[data-call-id="c1"] .result') && $(".run-end .save-case") && d.querySelectorAll("li.session").length >= 2, () => {
    $('.tool-card[data-call-id="c1"] .result').click();
    waitFor(() => $(".fork-bar .fork-here"), () => {
      const picked = $(".fork-bar").dataset.seq, pickedClass = $(".picked").className;
      $(".fork-here").click();
      const form = { op: $(".fork-op").value, call: $(".fork-call").value, content: $(".fork-content").value, options: texts(".fork-op option") };
      $(".fork-op").value = "drop_last_user"; $(".fork-op").dispatchEvent(new Event("change"));
      const contentHidden = $(".fork-content").hidden;
      $(".fork-go").click();
      waitFor(() => $(".fork-error"), () => {
        const refused = $(".fork-error").textContent;
        $(".fork-op").value = "replace_tool_result"; $(".fork-op").dispatchEvent(new Event("change"));
        $(".fork-content").value = "41";
        $(".fork-go").click();
        waitFor(() => B.fork && $("#thread").textContent === B.fork && $(".lineage"), () => {
          report("forked", { picked, pickedClass, form, contentHidden, refused, fork: B.fork, lineage: $(".lineage").textContent,
            buttons: texts(".lineage button"), results: texts(".tool-card .result"), assistants: texts(".msg.assistant"), status: $("#status").textContent });
          $(".fork-resume").click();
          waitFor(() => Number(B.runs || 0) >= 1 && B.state === "idle", () => {
            report("resumed", { thread: $("#thread").textContent, results: texts(".tool-card .result"), assistants: texts(".msg.assistant"),
              buttons: texts(".lineage button"), status: $("#status").textContent });
            $(".fork-compare").click();
            waitFor(() => B.compare, () => {
              report("compared", { compare: B.compare, sides: [...d.querySelectorAll("#compare .side")].map((s) => ({ session: s.dataset.session,
                totals: s.querySelector(".totals").textContent, messages: [...s.querySelectorAll(".cmsg")].map((m) => m.textContent) })) });
              open("orig");
              waitFor(() => $("#thread").textContent === "orig" && $(".save-case"), () => {
                $(".msg.user").click();
                $(".fork-here").click();
                const asked = { op: $(".fork-op").value, content: $(".fork-content").value, callHidden: $(".fork-call").hidden };
                $(".fork-content").value = "what is 6*8?";
                delete B.fork;
                $(".fork-go").click();
                waitFor(() => B.fork && $("#thread").textContent === B.fork && $(".lineage .fork-resume"), () => {
                  const lineage = $(".lineage").textContent, users = texts(".msg.user");
                  $(".fork-resume").click();
                  waitFor(() => Number(B.runs || 0) >= 2 && B.state === "idle", () => {
                    report("edited", { asked, lineage, users, fork: B.fork, after: texts(".msg.user"), assistants: texts(".msg.assistant"), status: $("#status").textContent });
                    open("orig");
                    waitFor(() => $("#thread").textContent === "orig" && $(".save-case"), () => {
                $(".save-case").click();
                waitFor(() => B.saved && blob, async () => {
                  const bytes = new Uint8Array(await blob.arrayBuffer());
                  let bin = ""; for (const b of bytes) bin += String.fromCharCode(b);
                  report("saved", { name: B.saved, status: $("#status").textContent, zip: btoa(bin) });
                  open("again");
                  waitFor(() => $("#thread").textContent === "again" && $(".trace-link"), () => {
                    const card = $('.tool-card[data-call-id="c1"]');
                    $(".trace-link").click();
                    waitFor(() => B.trace && $(".trace-bar.k-tool"), () => {
                      const bar = $(".trace-bar.k-tool");
                      report("trace", { cached: bar.dataset.cached || "", classes: bar.className, label: bar.parentNode.parentNode.textContent,
                        card: card.className, state: card.querySelector(".state").textContent,
                        others: [...d.querySelectorAll(".trace-bar:not(.k-tool)")].filter((b) => b.dataset.cached).length });
                    });
                  });
                });
              });
            });
          });
        });
      });
    });
  });
  });
  });
  });
};
</script></body></html>`

// forkConsoleEnv serves a real host (the scripted provider, calc in Wasm with its results
// cached, SQLite) through its door, and the harness on the same origin; the original
// session ("orig") and one whose calc result came from the cache ("again") are stored.
func forkConsoleEnv(t *testing.T) (dir string, ts string, h *host.Host, results <-chan string) {
	dir = t.TempDir()
	manifest := writeManifest(t, dir, forkScript, "", false)
	b, _ := os.ReadFile(manifest)
	cached := strings.Replace(string(b), "[plugins.permissions]", "cache = { ttl = \"10m\", scope = \"global\", tools = [\"calc\"] }\n[plugins.permissions]", 1)
	if err := os.WriteFile(manifest, []byte(cached), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := host.Open(context.Background(), host.Options{Manifest: manifest, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Agent: h.Agent, Store: h.Store, Token: "tok", Door: h.Door(), Plugins: func() any { return h.PluginInfo() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	s, results := serveHarness(t, srv, "/fork-harness", forkHarness, 8)
	for _, r := range [][2]string{{"orig", "what is 6*7?"}, {"again", "and 6*7 once more?"}} {
		if code, body := post(t, s.URL+"/v1/runs", runBody(r[0], "r-"+r[0], r[1])); code != 200 || !strings.Contains(body, "RUN_FINISHED") {
			t.Fatalf("run %s: %d %s", r[0], code, body)
		}
	}
	return dir, s.URL, h, results
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// messagesOf is a session's stored messages as "role:text" (a tool result with its call
// id), in order.
func messagesOf(t *testing.T, h *host.Host, session string) []string {
	t.Helper()
	es, err := h.Store.Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if e.Kind == loop.EntryMessage {
			m := e.Message
			out = append(out, string(m.Role)+m.ToolCallID+":"+m.Text())
		}
	}
	return out
}

// In the console, a stored tool result is forked from with its result replaced: an edit
// the door refuses shows the door's reason and stores nothing; the fork opens with its
// lineage, Resume runs the model on it and the model answers from the replacement
// while the original stays as it was; a fork from the user message, edited, resumes
// with the model seeing the new text; Compare shows both sides from the point they
// part; "save as test case" downloads the original's replay fixture, which `eval
// --replay` passes offline; and the trace view marks a tool result the cache answered.
// Checked in Chromium against a real host; screenshots are written for a reviewer.
func TestConsoleForksFromAToolResultResumesComparesAndSavesATestCase(t *testing.T) {
	dir, url, h, results := forkConsoleEnv(t)
	origBefore := messagesOf(t, h, "orig")
	proc := startChromium(t, url+"/fork-harness#token=tok&session=orig")

	var f struct {
		Picked, PickedClass, Refused, Fork, Lineage, Status string
		ContentHidden                                       bool
		Form                                                struct {
			Op, Call, Content string
			Options           []string
		}
		Buttons, Results, Assistants []string
	}
	shipStage(t, results, "forked", &f)
	if f.Form.Op != "replace_tool_result" || f.Form.Call != "c1" || f.Form.Content != "42" ||
		strings.Join(f.Form.Options, "|") != "no edit|replace a tool result|edit the last user message|drop the last user message|drop the last turn" {
		t.Errorf("the fork form as a tool result suggests it: %+v", f.Form)
	}
	if !strings.Contains(f.PickedClass, "picked") || !f.ContentHidden {
		t.Errorf("picked %q, content shown for drop_last_user: %v", f.PickedClass, !f.ContentHidden)
	}
	if f.Refused != "edit 1 (drop_last_user): invalid fork: the last user message is not the fork's last message: fork at its seq, or drop the last turn" {
		t.Errorf("the refused edit shows %q", f.Refused)
	}
	lin, ok, err := h.Lineage(context.Background(), f.Fork)
	if err != nil || !ok || lin.Parent != "orig" || f.Picked != itoa(lin.At) || len(lin.Edits) != 1 || lin.Edits[0].Op != loop.EditReplaceToolResult {
		t.Fatalf("the fork %q's lineage: %+v %v %v (picked entry %s)", f.Fork, lin, ok, err, f.Picked)
	}
	if f.Lineage != "Forked from orig at entry "+f.Picked+" · edited: replace_tool_result c1ResumeCompare with orig" ||
		strings.Join(f.Results, "|") != "41" || len(f.Assistants) != 0 || f.Status != "forked orig at entry "+f.Picked {
		t.Errorf("the fork as opened: %+v", f)
	}
	// The refused edit stored no session: orig, again and the fork.
	if list, err := loop.ListSessions(context.Background(), h.Store); err != nil || len(list) != 3 {
		t.Errorf("sessions stored: %+v %v", list, err)
	}

	var r struct {
		Thread, Status               string
		Results, Assistants, Buttons []string
	}
	shipStage(t, results, "resumed", &r)
	if r.Thread != f.Fork || strings.Join(r.Results, "|") != "41" || strings.Join(r.Assistants, "|") != "It is 41." ||
		strings.Join(r.Buttons, "|") != "Compare with orig" || r.Status != "finished: completed" {
		t.Errorf("the resumed fork: %+v", r)
	}
	if got := messagesOf(t, h, "orig"); strings.Join(got, "\n") != strings.Join(origBefore, "\n") ||
		strings.Join(got[len(got)-2:], "|") != "toolc1:42|assistant:It is 42." {
		t.Errorf("the original changed:\n%q\nwas\n%q", got, origBefore)
	}
	if got := messagesOf(t, h, f.Fork); strings.Join(got[len(got)-2:], "|") != "toolc1:41|assistant:It is 41." {
		t.Errorf("the fork holds %q", got)
	}

	var c struct {
		Compare string
		Sides   []struct {
			Session, Totals string
			Messages        []string
		}
	}
	shipStage(t, results, "compared", &c)
	if c.Compare != "orig|"+f.Fork || len(c.Sides) != 2 ||
		c.Sides[0].Session != "orig" || strings.Join(c.Sides[0].Messages, "|") != "assistantIt is 42." || c.Sides[0].Totals != "from entry "+f.Picked+" · 1 run · 119 tokens · $0.0020" ||
		c.Sides[1].Session != f.Fork || strings.Join(c.Sides[1].Messages, "|") != "assistantIt is 41." || c.Sides[1].Totals != "from entry 4 · 1 run · 74 tokens · $0.0020" {
		t.Errorf("compare: %+v", c)
	}

	var ed struct {
		Asked struct {
			Op, Content string
			CallHidden  bool
		}
		Lineage, Fork, Status    string
		Users, After, Assistants []string
	}
	shipStage(t, results, "edited", &ed)
	if ed.Asked.Op != "edit_last_user" || ed.Asked.Content != "what is 6*7?" || !ed.Asked.CallHidden {
		t.Errorf("the fork form as a user message suggests it: %+v", ed.Asked)
	}
	if !strings.HasPrefix(ed.Lineage, "Forked from orig at entry ") || !strings.HasSuffix(ed.Lineage, " · edited: edit_last_userResumeCompare with orig") ||
		strings.Join(ed.Users, "|") != "what is 6*8?" || strings.Join(ed.After, "|") != "what is 6*8?" ||
		strings.Join(ed.Assistants, "|") != "You now ask about 6*8." || ed.Status != "finished: completed" {
		t.Errorf("the fork with its user message edited, resumed: %+v", ed)
	}
	if got := messagesOf(t, h, ed.Fork); strings.Join(got, "|") != "system:You compute.|user:what is 6*8?|assistant:You now ask about 6*8." {
		t.Errorf("the edited fork holds %q", got)
	}

	var s struct{ Name, Status, Zip string }
	shipStage(t, results, "saved", &s)
	if s.Name != "orig.zip" || s.Status != "saved orig.zip: unzip it and run eval --replay orig" {
		t.Errorf("saved: %q %q", s.Name, s.Status)
	}
	zipped, err := base64.StdEncoding.DecodeString(s.Zip)
	if err != nil {
		t.Fatal(err)
	}
	fixture := unzipTo(t, zipped, filepath.Join(t.TempDir(), "saved"))
	checkReplay(t, dir, fixture)

	var tr struct {
		Cached, Classes, Label, Card, State string
		Others                              int
	}
	shipStage(t, results, "trace", &tr)
	if tr.Cached != "true" || tr.Classes != "trace-bar k-tool cached" || !strings.HasPrefix(tr.Label, "calc (cached, ") || !strings.Contains(tr.Label, " old) · ") ||
		tr.Card != "tool-card cached" || tr.Others != 0 {
		t.Errorf("the trace view of the cached result: %+v", tr)
	}
	stopChromium(proc)

	shots := screenshotsDir(t)
	for name, frag := range map[string]string{
		"console-fork-resumed.png": "session=" + f.Fork,
		"console-compare.png":      "session=" + f.Fork + "&compare=orig",
		"console-trace-cached.png": "session=again&trace=r-again",
	} {
		shot := filepath.Join(shots, name)
		chromium(t, "--screenshot="+shot, "--window-size=1200,800", url+"/#token=tok&"+frag)
		if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
			t.Fatalf("screenshot %s: %v", shot, err)
		}
		t.Logf("screenshot: %s", shot)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// unzipTo unpacks the saved archive into dir and returns the one directory it holds,
// after checking the archive holds exactly orig/{cases.jsonl,model.json,tools.json}.
func unzipTo(t *testing.T, data []byte, dir string) string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(names)
	if strings.Join(names, " ") != "orig/cases.jsonl orig/model.json orig/tools.json" {
		t.Fatalf("the archive holds %v", names)
	}
	return filepath.Join(dir, "orig")
}

// checkReplay: the saved fixture is byte for byte what `sessions export orig --fixture`
// writes, and `eval --replay` passes it offline (a fresh store, calc live).
func checkReplay(t *testing.T, dir, fixture string) {
	t.Helper()
	bin := testbin.Path(t, testbin.Agenthost)
	exported := filepath.Join(t.TempDir(), "exported")
	agenthost := func(dir string, args ...string) (string, string, error) {
		cmd := exec.Command(bin, append([]string{"-c", filepath.Join(dir, "agent.toml")}, args...)...)
		cmd.Dir = dir
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	if out, errs, err := agenthost(dir, "sessions", "export", "orig", "--fixture", exported); err != nil {
		t.Fatalf("sessions export: %v\n%s%s", err, out, errs)
	}
	for _, name := range []string{"cases.jsonl", "model.json", "tools.json"} {
		a, _ := os.ReadFile(filepath.Join(fixture, name))
		b, _ := os.ReadFile(filepath.Join(exported, name))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: saved in the console\n%s\nexported by the CLI\n%s", name, a, b)
		}
	}
	fresh := t.TempDir()
	writeManifest(t, fresh, `{"turns": []}`, "", false)
	out, errs, err := agenthost(fresh, "eval", "--json", "--replay", fixture)
	var rep struct {
		Passed int
		Cases  []struct {
			ID   string
			Pass bool
		}
	}
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep.Passed != 1 || len(rep.Cases) != 1 || rep.Cases[0].ID != "orig" {
		t.Fatalf("eval --replay of the saved test case: %v\n%s\n%s", err, out, errs)
	}
}
