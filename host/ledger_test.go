package host

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/loop"
)

// A plugin's create_message is charged to the run that called it (loop.Ledger): the
// summarize context plugin's model call appears in the run's usage and cost.
func TestCreateMessageIsChargedToTheCallingRun(t *testing.T) {
	h := openHostWith(t, "", `{"per_session": false, "turns": [
	  {"usage": {"prompt_tokens": 10, "completion_tokens": 1}, "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]},
	  {"usage": {"prompt_tokens": 10, "completion_tokens": 1}, "tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\":\"2+2\"}"}]},
	  {"expect": {"tools_offered": false, "contains": "Summarise this conversation"}, "usage": {"prompt_tokens": 1000, "completion_tokens": 200}, "text": "sums"},
	  {"usage": {"prompt_tokens": 10, "completion_tokens": 1}, "text": "{{result c2}}"}]}`,
		calcPlugin("calc")+hookPlugin(t, "summarize", "context", `model = true`+"\n"+`config = { max_messages = "3", keep = "2" }`), Options{})
	res, _ := runHost(t, h, "s", "add")
	if res.Final.Text() != "4" {
		t.Fatalf("final %q", res.Final.Text())
	}
	if want := 3*11 + 1200; res.Usage.TotalTokens != want {
		t.Fatalf("the run's usage is %d tokens, want %d (its three calls and the plugin's)", res.Usage.TotalTokens, want)
	}
}

// A create_message the run's budget cannot pay for is refused before the provider is
// asked: the plugin gets the refusal (a context strategy fails open: an error event),
// and the run ends budget_exceeded having paid for its own two calls only.
func TestCreateMessageOverTheRunsBudgetIsRefused(t *testing.T) {
	h := openHostWith(t, "max_tokens = 40", `{"per_session": false, "turns": [
	  {"usage": {"prompt_tokens": 10, "completion_tokens": 1}, "tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"1+1\"}"}]},
	  {"usage": {"prompt_tokens": 10, "completion_tokens": 1}, "tool_calls": [{"id": "c2", "name": "calc", "arguments": "{\"expression\":\"2+2\"}"}]},
	  {"text": "never asked: the budget cannot pay for it"}]}`,
		calcPlugin("calc")+hookPlugin(t, "summarize", "context", `model = true`+"\n"+`config = { max_messages = "3", keep = "2" }`), Options{})
	res, evs := runHost(t, h, "s", "add")
	var refused bool
	for _, e := range evs {
		if d, ok := e.Data.(*loop.ErrorData); ok && strings.Contains(d.Message, "sampling refused") {
			refused = true
		}
	}
	if !refused {
		t.Fatalf("no refused sampling among the events; result %s/%s", res.Status, res.Reason)
	}
	if res.Usage.TotalTokens != 22 || res.Reason != loop.ReasonBudgetExceeded {
		t.Fatalf("%s/%s with usage %d tokens, want budget_exceeded after the run's two calls (22)", res.Status, res.Reason, res.Usage.TotalTokens)
	}
}
