package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// formTool asks for a name (loop.InputRequiredError) and greets with the answer.
func formTool() loop.Tool {
	return loop.FuncTool{ToolSpec: loop.ToolSpec{Name: "signup", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, c loop.ToolCall) (loop.ToolResult, error) {
			a, ok := loop.AnswerFrom(ctx)
			if !ok {
				return loop.ToolResult{}, &loop.InputRequiredError{Request: loop.InputRequest{Message: "Who are you?",
					Schema: json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string","title":"Name"},"age":{"type":"integer"},"plan":{"type":"string","enum":["free","pro"]},"terms":{"type":"boolean"}}}`)}}
			}
			return loop.TextResult("hello " + string(a.Input)), nil
		}}
}

// inputHarness runs a prompt in the console, fills the form the tool's input request
// shows, sends it, and reports the card once the resumed run has its result.
const inputHarness = `<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;width:1200px;height:800px"></iframe>
<script>
const f = document.getElementById("f");
f.src = "/" + location.hash;
function waitFor(cond, then) { const t = () => { let ok = false; try { ok = cond(); } catch (e) {} ok ? then() : setTimeout(t, 50); }; t(); }
f.onload = () => {
  const d = f.contentDocument, $ = (id) => d.getElementById(id), out = {};
  waitFor(() => d.readyState === "complete", () => {
    $("send").click();
    waitFor(() => d.querySelector(".input-form"), () => {
      const form = d.querySelector(".input-form");
      out.fields = [...form.querySelectorAll("input, select")].map((i) => i.name + ":" + i.type);
      out.message = form.firstChild.textContent;
      form.querySelector('input[name="name"]').value = "Ana";
      form.querySelector('input[name="age"]').value = "30";
      form.querySelector('select[name="plan"]').value = "pro";
      form.querySelector('input[name="terms"]').checked = true;
      form.querySelector(".send-input").click();
      waitFor(() => ($("conversation").textContent || "").includes("hello {"), () => {
        out.conversation = $("conversation").textContent;
        fetch("/harness-result", { method: "POST", body: JSON.stringify(out) });
      });
    });
  });
};
</script></body></html>`

// A tool's request for input is a form in the console, built from its schema; what the
// user fills in resumes the run and reaches the tool, typed as the schema says.
func TestConsoleInputRequestIsAFormThatResumesTheRun(t *testing.T) {
	results := make(chan string, 1)
	wrap := func(srv http.Handler) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /input-harness", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(inputHarness))
		})
		mux.HandleFunc("POST /harness-result", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			results <- string(b)
		})
		mux.Handle("/", srv)
		return mux
	}
	e := newTestEnv(t, envOptions{token: "tok", wrap: wrap, extraTools: []loop.Tool{formTool()}},
		turn{calls: []loop.ToolCall{{ID: "s1", Name: "signup", Arguments: `{}`}}}, turn{text: "signed up"})
	res := runHarness(t, results, e.ts.URL+"/input-harness#token=tok&session=form1&prompt=sign%20me%20up")
	var got struct {
		Fields                []string
		Message, Conversation string
	}
	if err := json.Unmarshal([]byte(res), &got); err != nil {
		t.Fatalf("harness result %q: %v", res, err)
	}
	if strings.Join(got.Fields, ",") != "name:text,age:number,plan:select-one,terms:checkbox" || got.Message != "Who are you?" {
		t.Fatalf("the form: %v %q", got.Fields, got.Message)
	}
	if !strings.Contains(got.Conversation, `hello {"age":30,"name":"Ana","plan":"pro","terms":true}`) {
		t.Fatalf("the tool got: %s", got.Conversation)
	}
}
