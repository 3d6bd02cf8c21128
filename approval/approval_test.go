package approval

import (
	"errors"
	"strings"
	"testing"
)

func TestFirstMatchingRuleDecides(t *testing.T) {
	p, err := Compile([]Rule{
		{Name: "big", When: `tool == "transfer" && args.amount > 100`, Decision: "ask"},
		{Name: "admins", When: `role == "admin"`, Decision: "allow"},
		{When: `tool == "transfer"`, Decision: "deny"},
		{Name: "spend", When: `spend.cost_usd > 0.5 || spend.tool_calls >= 3`, Decision: "deny"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f    Facts
		want string
	}{
		{Facts{Tool: "transfer", Args: map[string]any{"amount": 150.0}}, "big"},
		{Facts{Tool: "transfer", Args: map[string]any{"amount": 50.0}, Role: "admin"}, "admins"},
		{Facts{Tool: "transfer", Args: map[string]any{"amount": 50.0}}, "rule-3"},
		{Facts{Tool: "search", ToolCalls: 3}, "spend"},
		{Facts{Tool: "search", CostUSD: 0.75}, "spend"},
		{Facts{Tool: "search"}, ""},
	} {
		r, ok, err := p.Decide(c.f)
		if err != nil || ok != (c.want != "") || r.Name != c.want && ok {
			t.Errorf("Decide(%+v) = %q %v %v, want %q", c.f, r.Name, ok, err, c.want)
		}
	}
}

// A condition that cannot be evaluated is an error naming the rule, never a pass.
func TestARuleThatCannotBeEvaluatedIsAnError(t *testing.T) {
	p, err := Compile([]Rule{{Name: "big", When: `args.amount > 100`, Decision: "ask"}})
	if err != nil {
		t.Fatal(err)
	}
	_, ok, err := p.Decide(Facts{Tool: "transfer", Args: map[string]any{"to": "x"}})
	if ok || err == nil || !strings.Contains(err.Error(), `rule "big"`) {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	p, _ = Compile([]Rule{{When: `args.x`, Decision: "ask"}})
	if _, _, err := p.Decide(Facts{Args: map[string]any{"x": "yes"}}); err == nil || !strings.Contains(err.Error(), "not a bool") {
		t.Fatalf("err=%v", err)
	}
}

func TestCompileErrorsNameTheRuleAndKey(t *testing.T) {
	for _, c := range []struct {
		rules []Rule
		key   string
		msg   string
	}{
		{[]Rule{{When: "true", Decision: "maybe"}}, "decision", "not allow, ask or deny"},
		{[]Rule{{When: "", Decision: "ask"}}, "when", "needs a condition"},
		{[]Rule{{When: "tool ==", Decision: "ask"}}, "when", "does not compile"},
		{[]Rule{{When: "nosuchvar == 1", Decision: "ask"}}, "when", "does not compile"},
		{[]Rule{{When: `"text"`, Decision: "ask"}}, "when", "not a bool"},
		{[]Rule{{Name: "a", When: "true", Decision: "ask"}, {Name: "a", When: "true", Decision: "ask"}}, "name", "two rules"},
	} {
		_, err := Compile(c.rules)
		var e *Error
		if !errors.As(err, &e) || e.Key != c.key || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("Compile(%+v) = %v, want %s: %s", c.rules, err, c.key, c.msg)
		}
	}
}
