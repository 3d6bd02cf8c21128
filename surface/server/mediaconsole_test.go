package server

import (
	"context"
	"fmt"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
)

// mediaHarness frames the console, attaches a file through its upload control (as a
// file picker would: a File set on the input; the browser calls it an image, the bytes
// say PDF), clicks Run, notes the status when the tool's image first appears, and when the run has ended and the tool card's image has loaded
// reports the DOM ("done", with the image's natural size on the body); then it clicks the
// user message's download link and reports the file name and bytes the link would save
// ("downloaded").
const mediaHarness = `<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:1200px;height:800px"></iframe>
<script>
const f = document.getElementById("f");
f.src = "/" + location.hash;
const report = (stage, body) => fetch("/harness-result", { method: "POST", body: stage + "\n" + (body || f.contentDocument.documentElement.outerHTML) });
function waitFor(cond, then) { const t = () => { try { if (cond()) return then(); } catch (e) {} setTimeout(t, 50); }; t(); }
f.onload = () => {
  const d = f.contentDocument, w = f.contentWindow, $ = (s) => d.querySelector(s), runs = () => Number(d.body.dataset.runs || 0);
  waitFor(() => $("#sessions").children.length > 0 && $("#attach-file"), () => {
    const dt = new w.DataTransfer();
    dt.items.add(new w.File(["%PDF-1.4\n% a note for the agent\n"], "note.pdf", { type: "image/png" }));
    $("#upload").files = dt.files;
    $("#upload").dispatchEvent(new w.Event("change"));
    waitFor(() => d.body.dataset.attachments === "1", () => {
      // Where the tool's image first appears: in the live stream (status "running") or
      // only when the page redraws the session after the run. The status is the one when
      // the image was added, replayed from the batch's records in order: a loaded machine
      // can hand the page the stream's last events in one read, so the run's end may be
      // in the same batch as the image, and the status read afterwards is the end's.
      const st = $("#status"), texts = (nodes) => Array.from(nodes, (n) => n.textContent).join("");
      new w.MutationObserver((records) => {
        if (d.body.dataset.imageFirstSeen) return;
        const first = records.find((r) => r.target === st);
        let status = first ? texts(first.removedNodes) : st.textContent;
        for (const r of records) {
          if (r.target === st) { status = texts(r.addedNodes); continue; }
          for (const n of r.addedNodes) {
            const img = n.nodeType === 1 && (n.matches(".media-image") ? n : n.querySelector(".media-image"));
            if (img && img.closest(".tool-card")) { d.body.dataset.imageFirstSeen = status; return; }
          }
        }
      }).observe(d.body, { subtree: true, childList: true });
      $("#send").click();
      const img = () => $(".tool-card .media-image");
      waitFor(() => runs() >= 1 && img() && img().complete && img().naturalWidth > 0, async () => {
        d.body.dataset.image = img().naturalWidth + "x" + img().naturalHeight;
        await report("done");
        // The browser's own download (the link's second, programmatic click) is held back:
        // headless, it could navigate the frame; what the link would save is read instead.
        d.addEventListener("click", (e) => { if (e.target.download) e.preventDefault(); }, true);
        const a = $(".msg.user .media-file");
        a.click();
        waitFor(() => a.href.startsWith("blob:") && a.download, async () => report("downloaded", a.download + "\n" + await (await fetch(a.href)).text()));
      });
    });
  });
};
</script></body></html>`

// shotServer is a real MCP server (the go-sdk, Streamable HTTP on loopback) whose tool
// screenshot answers a line of text and a PNG image.
func shotServer(t *testing.T, shot []byte) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "shots", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "screenshot", Description: "Takes a screenshot."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the screen, 64×48"}, &mcp.ImageContent{Data: shot, MIMEType: "image/png"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// The "Must show": an MCP server's image result is shown in the console and
// passed to the model. In headless Chromium against a real host (SQLite, the scripted
// provider as a subprocess, a go-sdk MCP server): a file attached through the console's
// upload control goes with the message; the model calls the MCP tool; the provider then
// gets both the PDF and the tool's PNG, byte for byte (its answer names their sha256s);
// the tool card shows the image inline (loaded through the attachment route, 64×48) while
// the run is still streaming (TOOL_CALL_RESULT's attachments) and after the redraw, the
// user message offers the PDF for download, and the download serves its bytes. A
// screenshot is left in testdata/screenshots.
func TestConsoleShowsAnMCPImageResultAndTheModelGetsIt(t *testing.T) {
	shot := pngBytes(t, 64, 48, color.RGBA{R: 30, G: 120, B: 220, A: 255})
	pdf := "%PDF-1.4\n% a note for the agent\n"
	manifest := writeManifest(t, t.TempDir(), `{"per_session": true, "turns": [
	  {"expect": {"contains": "take a screenshot"}, "tool_calls": [{"id": "c1", "name": "screenshot", "arguments": "{}"}]},
	  {"expect": {"last_role": "tool"}, "text": "I was given: {{media}}"}]}`, "", false)
	f, err := os.OpenFile(manifest, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n[[mcp_servers]]\nname = \"shots\"\nurl = %q\n", shotServer(t, shot))
	f.Close()
	h, err := host.Open(context.Background(), host.Options{Manifest: manifest, Approver: InterruptApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Agent: h.Agent, Store: h.Store, Token: "media-token"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() }) // after the server is drained
	ts, results := serveHarness(t, srv, "/harness", mediaHarness, 4)
	startChromium(t, ts.URL+"/harness#token=media-token&session=media-a&prompt=take%20a%20screenshot")

	dom := stage(t, results, "done")
	pdfRef, shotRef := refOf([]byte(pdf)), refOf(shot)
	mustContain(t, "done", dom,
		`<div class="msg user">take a screenshot<div class="media"><a class="media-file" href="#" data-ref="`+pdfRef+`" title="download note.pdf">note.pdf · application/pdf · 32 B</a></div></div>`,
		`<img class="media-image" alt="`+shotRef[:12]+`" title="`+shotRef[:12]+` · image/png · `,
		`data-ref="`+shotRef+`" src="blob:`,
		`<pre class="result">the screen, 64×48</pre>`,
		fmt.Sprintf(`file application/pdf %d B sha256:%s`, len(pdf), pdfRef),
		fmt.Sprintf(`image image/png %d B sha256:%s`, len(shot), shotRef),
		`data-image="64x48"`,
		`data-image-first-seen="running"`,
		`<span id="status" class="">finished: completed</span>`,
	)
	if !strings.Contains(dom, `<div class="msg assistant">I was given: file application/pdf`) {
		t.Errorf("the model's answer is not the {{media}} of its request:\n%s", dom)
	}
	got := stage(t, results, "downloaded")
	if got != "note.pdf\n"+pdf {
		t.Errorf("the download link served %q, want note.pdf and its bytes", got)
	}

	// The stored tool message holds the image's reference, not its bytes.
	entries, err := h.Store.Load(context.Background(), "media-a")
	if err != nil {
		t.Fatal(err)
	}
	var toolParts []loop.Part
	for _, e := range entries {
		if e.Message != nil && e.Message.Role == loop.RoleTool {
			toolParts = e.Message.Content
		}
	}
	if len(toolParts) != 2 || toolParts[1].Attachment != shotRef || toolParts[1].Data != nil || toolParts[1].MimeType != "image/png" {
		t.Fatalf("stored tool message parts %+v", toolParts)
	}

	name := filepath.Join(screenshotsDir(t), "console-media.png")
	chromium(t, "--screenshot="+name, "--window-size=1200,800", ts.URL+"/#token=media-token&session=media-a")
	sf, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(sf)
	sf.Close()
	if err != nil || cfg.Width != 1200 || cfg.Height != 800 {
		t.Fatalf("screenshot: %+v %v", cfg, err)
	}
	t.Logf("screenshot: %s", name)
}
