package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
)

const (
	featuresURI  = "demo://resource/static/document/features.md"
	featuresHead = "Attached resource " + featuresURI + " (MCP server \"everything\"):\n\n# Everything Server - Features"
)

// resourcesEnv serves a real host whose agent has the reference MCP server from npm
// (server-everything, which offers documents and resource templates) and the scripted
// model with fixture; the console harness (harness) is served on the same origin.
func resourcesEnv(t *testing.T, fixture, harness string) (*httptest.Server, *host.Host, <-chan string) {
	t.Helper()
	everything := filepath.Join(repoRoot(t), "cmd/agenthost/testdata/mcp-npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(everything); err != nil {
		t.Fatalf("server-everything is missing: run npm ci in cmd/agenthost/testdata/mcp-npm (make deps): %v", err)
	}
	dir := t.TempDir()
	manifest := writeManifest(t, dir, fixture, "", false)
	f, _ := os.OpenFile(manifest, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"everything\"\ncommand = [\"node\", %q]\ntools = [\"echo\"]\n", everything)
	f.Close()
	h, err := host.Open(context.Background(), host.Options{Manifest: manifest, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Agent: h.Agent, Store: h.Store, Token: "res-token", Resources: &Resources{List: h.MCPResources, Read: h.ReadMCPResource}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() }) // after the server is drained
	ts, results := serveHarness(t, srv, "/harness", harness, 8)
	return ts, h, results
}

func getJSON(t *testing.T, url, token string, into any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("%s: %v: %s", url, err, b)
		}
	}
	return resp.StatusCode
}

// The resource endpoints list server-everything's resources and templates, and read one
// as the parts a user message carries: the text headed by its URI and server. A template
// filled in reads too. Without the token, with a part missing, for a server the agent
// does not have, or for a URI the server refuses, the answer says so.
func TestResourceEndpointsListAndReadAnMCPServersResources(t *testing.T) {
	ts, _, _ := resourcesEnv(t, `{"turns": []}`, "")
	var list struct {
		Servers map[string][]struct {
			URI         string `json:"uri"`
			URITemplate string `json:"uri_template"`
		} `json:"servers"`
	}
	if code := getJSON(t, ts.URL+"/v1/mcp/resources", "res-token", &list); code != 200 {
		t.Fatalf("list: %d", code)
	}
	var haveDoc, haveTemplate bool
	for _, r := range list.Servers["everything"] {
		haveDoc = haveDoc || r.URI == featuresURI
		haveTemplate = haveTemplate || r.URITemplate == "demo://resource/dynamic/text/{resourceId}"
	}
	if len(list.Servers) != 1 || !haveDoc || !haveTemplate {
		t.Fatalf("list: %+v", list)
	}
	read := func(server, uri string, into any) int {
		return getJSON(t, ts.URL+"/v1/mcp/resources/read?server="+server+"&uri="+uri, "res-token", into)
	}
	var got struct {
		Server, URI string
		Parts       []contentPart
	}
	if code := read("everything", featuresURI, &got); code != 200 || got.Server != "everything" || got.URI != featuresURI ||
		len(got.Parts) != 1 || got.Parts[0].Type != "text" || !strings.HasPrefix(got.Parts[0].Text, featuresHead) {
		t.Fatalf("read: %d %+v", code, got)
	}
	if code := read("everything", "demo://resource/dynamic/text/7", &got); code != 200 ||
		!strings.HasPrefix(got.Parts[0].Text, "Attached resource demo://resource/dynamic/text/7 (MCP server \"everything\"):\n\nResource 7: This is a plaintext resource") {
		t.Fatalf("read a template: %d %+v", code, got)
	}
	var e struct{ Error string }
	for _, c := range []struct {
		server, uri string
		code        int
		want        string
	}{
		{"everything", "", 400, "server and uri are required"},
		{"nobody", featuresURI, 404, `no MCP server with resources of that name: "nobody"`},
		{"everything", "demo://nothing/here", 502, `mcp server "everything": read demo://nothing/here`},
	} {
		e.Error = ""
		if code := read(c.server, c.uri, &e); code != c.code || !strings.Contains(e.Error, c.want) {
			t.Errorf("read %s %s: %d %q, want %d %q", c.server, c.uri, code, e.Error, c.code, c.want)
		}
	}
	if code := getJSON(t, ts.URL+"/v1/mcp/resources", "", nil); code != 401 {
		t.Errorf("list without the token: %d", code)
	}
}

// An image a resource holds becomes an image part after the text part naming it.
func TestAttachmentPartsKeepImagesAsImages(t *testing.T) {
	got := attachmentParts("s", "x://1", []loop.Part{loop.TextPart("a"), {Type: loop.PartImage, URL: "data:image/png;base64,AAAA"}, loop.TextPart("b")})
	want := []contentPart{{Type: "text", Text: "Attached resource x://1 (MCP server \"s\"):\n\na\nb"},
		{Type: "image", Source: &dataSource{Type: "data", Value: "AAAA", MimeType: "image/png"}}}
	if g, w := mustJSON(got), mustJSON(want); g != w {
		t.Fatalf("got %s, want %s", g, w)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// resourcesHarness opens the Resources panel, attaches server-everything's features.md and
// the text template filled in with 7, reports ("attached"), types a question and sends it,
// and reports when the run has ended ("done").
const resourcesHarness = `<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:1200px;height:800px"></iframe>
<script>
const f = document.getElementById("f");
f.src = "/" + location.hash;
const report = (stage) => fetch("/harness-result", { method: "POST", body: stage + "\n" + f.contentDocument.documentElement.outerHTML });
function waitFor(cond, then) { const t = () => { try { if (cond()) return then(); } catch (e) {} setTimeout(t, 50); }; t(); }
f.onload = () => {
  const d = f.contentDocument, $ = (s) => d.querySelector(s), n = () => Number(d.body.dataset.attachments || 0);
  waitFor(() => $("#sessions").children.length > 0, () => {
    $("#show-resources").click();
    waitFor(() => $('li.resource[data-uri="` + featuresURI + `"] .attach'), () => {
      $('li.resource[data-uri="` + featuresURI + `"] .attach').click();
      waitFor(() => n() === 1, () => {
        const tpl = $('li.resource.template[data-uri="demo://resource/dynamic/text/{resourceId}"]');
        tpl.querySelector("input.uri").value = "demo://resource/dynamic/text/7";
        tpl.querySelector(".attach").click();
        waitFor(() => n() === 2, async () => {
          await report("attached");
          $("#prompt").value = "What do these say?";
          $("#send").click();
          waitFor(() => Number(d.body.dataset.runs || 0) >= 1 && d.body.dataset.state === "idle", () => report("done"));
        });
      });
    });
  });
};
</script></body></html>`

// TestConsoleAttachesAnMCPResource drives the console in headless Chromium: the Resources
// panel lists server-everything's resources, two are attached (a document, and a template
// filled in), and the next message carries them after the typed text: the scripted model
// refuses a request whose last user message lacks the document's text under its heading
// (expect.contains), the run completes, and the stored message holds both resources.
func TestConsoleAttachesAnMCPResource(t *testing.T) {
	fixture := mustJSON(map[string]any{"turns": []any{map[string]any{"expect": map[string]any{"contains": featuresHead}, "text": "Read them."}}})
	ts, h, results := resourcesEnv(t, fixture, resourcesHarness)
	proc := startChromium(t, ts.URL+"/harness#token=res-token&session=res-a")
	defer stopChromium(proc)

	dom := stage(t, results, "attached")
	mustContain(t, "attached", dom,
		`<li class="resource-server">everything</li>`,
		`<span class="attachment" data-server="everything" data-uri="`+featuresURI+`">📎 `+featuresURI+` <button class="drop" title="remove">×</button></span>`,
		`data-uri="demo://resource/dynamic/text/7">📎 demo://resource/dynamic/text/7 `)

	dom = stage(t, results, "done")
	mustContain(t, "done", dom,
		`<span id="status" class="">finished: completed</span>`,
		`<div class="msg assistant">Read them.</div>`,
		`<div class="msg user">What do these say?`+"\n\n"+`Attached resource `+featuresURI+` (MCP server "everything"):`,
		`<div id="attachments" hidden=""></div>`)

	entries, err := h.Store.Load(context.Background(), "res-a")
	if err != nil {
		t.Fatal(err)
	}
	var user []loop.Part
	for _, e := range entries {
		if e.Message != nil && e.Message.Role == loop.RoleUser {
			user = e.Message.Content
		}
	}
	if len(user) != 3 || user[0].Text != "What do these say?" || !strings.HasPrefix(user[1].Text, featuresHead) ||
		!strings.Contains(user[2].Text, "Resource 7: This is a plaintext resource") {
		t.Fatalf("stored user message: %+v", user)
	}
}
