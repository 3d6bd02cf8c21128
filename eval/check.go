package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/agenthost/agenthost/loop"
)

// Outcome is what a case's run did, read from its result and its events.
type Outcome struct {
	Session string          `json:"session"`
	Status  string          `json:"status"`
	Reason  string          `json:"reason"`
	Final   string          `json:"final"`
	Output  json.RawMessage `json:"output,omitempty"`
	Calls   []ToolCall      `json:"calls,omitempty"`
	Usage   loop.Usage      `json:"usage"`
	Metrics loop.RunMetrics `json:"metrics"`
	Error   string          `json:"error,omitempty"`
	// Events are the run's events, for the HTML report's transcript.
	Events []loop.Event `json:"-"`
	// lastError is the message of the run's last error event: why a run that should
	// have completed did not (a replayed model's expectation that failed names the
	// difference there).
	lastError string
}

// outcomeOf reads an outcome from a run's result and events.
func outcomeOf(res loop.RunResult, err error, events []loop.Event) Outcome {
	o := Outcome{Session: res.SessionID, Status: string(res.Status), Reason: string(res.Reason), Output: res.Output, Usage: res.Usage, Events: events}
	if res.Final != nil {
		o.Final = res.Final.Text()
	}
	if err != nil {
		o.Error = err.Error()
	}
	calls := map[string]int{}
	for _, e := range events {
		switch d := e.Data.(type) {
		case *loop.ToolCallData:
			var args map[string]any
			_ = json.Unmarshal(d.Arguments, &args)
			calls[d.ID] = len(o.Calls)
			o.Calls = append(o.Calls, ToolCall{Name: d.Name, Args: args})
		case *loop.ToolResultData:
			if i, ok := calls[d.ID]; ok {
				content := d.Content
				o.Calls[i].Result = &content
			}
		case *loop.ErrorData:
			o.lastError = d.Message
		case *loop.RunFinishedData:
			o.Metrics = d.Metrics
		}
	}
	return o
}

// failures checks an outcome against the expectations: what is wrong, or nothing.
func (x Expect) failures(o Outcome) []string {
	var out []string
	fail := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	want := x.Status
	if want == "" {
		want = string(loop.StatusCompleted)
	}
	if o.Status != want {
		why := ""
		if msg := o.lastError; msg != "" {
			why = ": " + clip(msg, 400)
		} else if o.Error != "" {
			why = ": " + clip(o.Error, 400)
		}
		fail("status %s/%s, want %s%s", o.Status, o.Reason, want, why)
	}
	if x.Reason != "" && o.Reason != x.Reason {
		fail("reason %s, want %s", o.Reason, x.Reason)
	}
	for _, s := range x.Contains {
		if !strings.Contains(o.Final, s) {
			fail("the final text does not contain %q", s)
		}
	}
	for _, s := range x.NotContains {
		if strings.Contains(o.Final, s) {
			fail("the final text contains %q", s)
		}
	}
	if x.Equals != nil && o.Final != *x.Equals {
		fail("the final text is %q, want %q", clip(o.Final, 200), clip(*x.Equals, 200))
	}
	if x.Matches != "" && !regexp.MustCompile(x.Matches).MatchString(o.Final) { // compiled once by Case.check
		fail("the final text does not match /%s/", x.Matches)
	}
	out = append(out, x.outputFailures(o)...)
	out = append(out, x.toolFailures(o.Calls)...)
	if x.MaxCostUSD > 0 && o.Usage.CostUSD > x.MaxCostUSD {
		fail("cost $%.6f, over max_cost_usd $%.6f", o.Usage.CostUSD, x.MaxCostUSD)
	}
	if x.MaxSteps > 0 && o.Metrics.ModelCalls > x.MaxSteps {
		fail("%d model calls, over max_steps %d", o.Metrics.ModelCalls, x.MaxSteps)
	}
	return out
}

func (x Expect) outputFailures(o Outcome) []string {
	doc := o.Final
	if len(o.Output) > 0 {
		doc = string(o.Output)
	}
	var out []string
	if len(x.OutputSchema) > 0 {
		if err := loop.ValidateAgainst(x.OutputSchema, doc); err != nil {
			out = append(out, fmt.Sprintf("the output does not match output_schema: %v", err))
		}
	}
	if len(x.OutputEquals) > 0 {
		var want, got any
		_ = json.Unmarshal(x.OutputEquals, &want)
		if err := json.Unmarshal([]byte(doc), &got); err != nil || !reflect.DeepEqual(want, got) {
			out = append(out, fmt.Sprintf("the output %s is not %s", clip(doc, 200), compact(x.OutputEquals)))
		}
	}
	return out
}

// toolFailures checks the expected calls: each matched by a call of that name whose
// arguments hold the expected ones; in order, each after the one before.
func (x Expect) toolFailures(calls []ToolCall) []string {
	var out []string
	if x.NoTools && len(calls) > 0 {
		out = append(out, fmt.Sprintf("%d tool calls, want none (first: %s)", len(calls), calls[0].Name))
	}
	from := 0
	for _, w := range x.Tools {
		found := -1
		start := 0
		if x.ToolsInOrder {
			start = from
		}
		for i := start; i < len(calls); i++ {
			if calls[i].Name == w.Name && subset(w.Args, calls[i].Args) && sameResult(w.Result, calls[i].Result) {
				found = i
				break
			}
		}
		if found < 0 {
			how := ""
			if x.ToolsInOrder && from > 0 {
				how = " after the previous expected call"
			}
			args, _ := json.Marshal(w.Args)
			results := ""
			if w.Result != nil {
				how = fmt.Sprintf(" and result %q", clip(*w.Result, 200)) + how
				results = resultsOf(w.Name, calls)
			}
			out = append(out, fmt.Sprintf("no call of %s with arguments %s%s (calls: %s)%s", w.Name, args, how, callNames(calls), results))
			continue
		}
		from = found + 1
	}
	return out
}

// subset reports whether got holds every key of want with an equal value (objects
// compared the same way, recursively).
func subset(want, got map[string]any) bool {
	for k, wv := range want {
		gv, ok := got[k]
		if !ok {
			return false
		}
		wm, wIsMap := wv.(map[string]any)
		gm, gIsMap := gv.(map[string]any)
		if wIsMap && gIsMap {
			if !subset(wm, gm) {
				return false
			}
			continue
		}
		if !reflect.DeepEqual(normal(wv), normal(gv)) {
			return false
		}
	}
	return true
}

// normal makes numbers from YAML and JSON compare alike (YAML gives ints).
func normal(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func callNames(calls []ToolCall) string {
	if len(calls) == 0 {
		return "none"
	}
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// sameResult reports whether a call's result is the expected one (nil: not checked).
func sameResult(want, got *string) bool {
	return want == nil || got != nil && *got == *want
}

// resultsOf says what the calls of name returned, for a failure about a result.
func resultsOf(name string, calls []ToolCall) string {
	var got []string
	for _, c := range calls {
		if c.Name == name && c.Result != nil {
			got = append(got, fmt.Sprintf("%q", clip(*c.Result, 200)))
		}
	}
	if len(got) == 0 {
		return ""
	}
	return "; its results: " + strings.Join(got, ", ")
}
