package eval

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sync"

	"github.com/agenthost/agenthost/loop"
)

// WriteHTML writes a self-contained HTML report: the summary, then each case with its
// failures, grades and transcript (prompt, the model's messages, tool calls and
// results, the final answer). Everything from a run is escaped by html/template: a
// model's answer holding markup shows as text.
func (r *Report) WriteHTML(w io.Writer) error {
	return htmlReport().Execute(w, r)
}

// transcriptLine is one line of a case's transcript.
type transcriptLine struct {
	Kind, Text string
}

func transcript(c Result) []transcriptLine {
	out := []transcriptLine{{"user", c.prompt}}
	for _, e := range c.Outcome.Events {
		switch d := e.Data.(type) {
		case *loop.AssistantMessageData:
			if t := d.Message.Text(); t != "" {
				out = append(out, transcriptLine{"assistant", t})
			}
		case *loop.ToolCallData:
			out = append(out, transcriptLine{"tool call", d.Name + " " + string(d.Arguments)})
		case *loop.ToolResultData:
			kind := "tool result"
			if d.IsError {
				kind = "tool error"
			}
			out = append(out, transcriptLine{kind, d.Content})
		case *loop.ErrorData:
			out = append(out, transcriptLine{"error", d.Kind + ": " + d.Message})
		}
	}
	if c.prompt == "" && len(out) > 0 {
		out = out[1:]
	}
	return out
}

// htmlReport is parsed on first use, not at package init.
var htmlReport = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"transcript": transcript,
		"pct":        func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
		"json": func(v any) string {
			b, _ := json.Marshal(v)
			return string(b)
		},
	}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>agenthost eval: {{.Dataset}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:60em;padding:0 1em;color:#222}
.pass{color:#176f2c}.fail{color:#b3261e}
details{border:1px solid #ddd;border-radius:6px;margin:.5em 0;padding:.4em .8em}
summary{cursor:pointer;font-weight:600}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:.4em .6em;border-radius:4px;margin:.2em 0}
.k{font-size:12px;color:#666;text-transform:uppercase;margin-top:.5em}
</style></head><body>
<h1>agenthost eval: {{.Dataset}}</h1>
<p><strong class="{{if .Failing}}fail{{else}}pass{{end}}">{{.Passed}}/{{len .Cases}} passed</strong> ({{pct .PassRate}}),
cost ${{printf "%.4f" .CostUSD}}, mean {{printf "%.0f" .MeanMS}} ms</p>
{{with .Regressions}}<h2 class="fail">Regressions</h2><ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{range .Cases}}<details{{if not .Pass}} open{{end}} id="case-{{.ID}}">
<summary><span class="{{if .Pass}}pass">pass{{else}}fail">FAIL{{end}}</span> {{.ID}} · {{.Outcome.Status}}/{{.Outcome.Reason}} · ${{printf "%.4f" .CostUSD}} · {{.DurationMS}} ms</summary>
{{with .Failures}}<div class="k">failures</div><ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{with .Grades}}<div class="k">grades</div><ul>{{range .}}<li>{{.Grader}}: {{if .Pass}}pass{{else}}fail{{end}}, score {{.Score}} — {{.Reason}}</li>{{end}}</ul>{{end}}
<div class="k">transcript (session {{.Outcome.Session}})</div>
{{range transcript .}}<div class="k">{{.Kind}}</div><pre>{{.Text}}</pre>{{end}}
{{with .Outcome.Output}}<div class="k">output</div><pre>{{json .}}</pre>{{end}}
</details>
{{end}}</body></html>
`))
})
