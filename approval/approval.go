package approval

import (
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
)

// Rule is one [[approvals]] entry.
type Rule struct {
	// Name names the rule in events, grants and the audit log (default "rule-N", N
	// counting from 1).
	Name string `toml:"name" json:"name,omitempty"`
	// When is the CEL condition; see Facts for its variables.
	When string `toml:"when" json:"when"`
	// Decision is allow, ask or deny.
	Decision string `toml:"decision" json:"decision"`
	// Reason is told to the model with a deny, and shown with an ask.
	Reason string `toml:"reason" json:"reason,omitempty"`
}

// Facts are a condition's variables: tool (string), args (the call's arguments, a
// map; JSON numbers are doubles), agent, user, role, session and source (strings: the
// MCP server or plugin the tool comes from, "" for the host's own), and spend (a map:
// tokens and tool_calls as ints, cost_usd as a double: the run's so far).
type Facts struct {
	Tool, Agent, User, Role, Session, Source string
	Args                                     any
	Tokens, ToolCalls                        int
	CostUSD                                  float64
}

// Error is a rule that does not compile: Index is its place in the list, Key the
// field at fault ("when", "decision", "name").
type Error struct {
	Index int
	Key   string
	Msg   string
}

func (e *Error) Error() string { return fmt.Sprintf("approvals[%d].%s: %s", e.Index, e.Key, e.Msg) }

// Policy is a compiled list of rules.
type Policy struct{ rules []compiled }

type compiled struct {
	Rule
	prg cel.Program
}

// env is built on first use (sync.OnceValue), not at package init.
var env = sync.OnceValue(func() *cel.Env {
	e, err := cel.NewEnv(
		cel.Variable("tool", cel.StringType), cel.Variable("args", cel.DynType),
		cel.Variable("agent", cel.StringType), cel.Variable("user", cel.StringType),
		cel.Variable("role", cel.StringType), cel.Variable("session", cel.StringType),
		cel.Variable("source", cel.StringType), cel.Variable("spend", cel.MapType(cel.StringType, cel.DynType)),
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(), ext.Lists(), ext.Math(), ext.Encoders(),
	)
	if err != nil {
		panic(err)
	}
	return e
})

// Compile checks and compiles rules, in order. Its error is an *Error.
func Compile(rules []Rule) (*Policy, error) {
	p := &Policy{}
	names := map[string]bool{}
	for i, r := range rules {
		if r.Name == "" {
			r.Name = fmt.Sprintf("rule-%d", i+1)
		}
		if names[r.Name] {
			return nil, &Error{i, "name", fmt.Sprintf("%q names two rules", r.Name)}
		}
		names[r.Name] = true
		switch r.Decision {
		case "allow", "ask", "deny":
		default:
			return nil, &Error{i, "decision", fmt.Sprintf("%q is not allow, ask or deny", r.Decision)}
		}
		if strings.TrimSpace(r.When) == "" {
			return nil, &Error{i, "when", "a rule needs a condition (when = \"true\" matches every call)"}
		}
		ast, iss := env().Compile(r.When)
		if iss.Err() != nil {
			return nil, &Error{i, "when", fmt.Sprintf("%q does not compile: %s", r.When, strings.ReplaceAll(iss.Err().Error(), "\n", " "))}
		}
		if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
			return nil, &Error{i, "when", fmt.Sprintf("%q is a %s, not a bool", r.When, t)}
		}
		prg, err := env().Program(ast, cel.CostLimit(100_000))
		if err != nil {
			return nil, &Error{i, "when", err.Error()}
		}
		p.rules = append(p.rules, compiled{Rule: r, prg: prg})
	}
	return p, nil
}

// Len is how many rules p has.
func (p *Policy) Len() int { return len(p.rules) }

// Decide returns the first rule whose condition holds for f; ok is false when none
// does. An error names the rule that could not be evaluated (a missing argument, a
// condition that is not a bool): the caller denies.
func (p *Policy) Decide(f Facts) (r Rule, ok bool, err error) {
	if p == nil || len(p.rules) == 0 {
		return Rule{}, false, nil
	}
	args := f.Args
	if args == nil {
		args = map[string]any{}
	}
	vars := map[string]any{"tool": f.Tool, "args": args, "agent": f.Agent, "user": f.User, "role": f.Role,
		"session": f.Session, "source": f.Source,
		"spend": map[string]any{"tokens": int64(f.Tokens), "tool_calls": int64(f.ToolCalls), "cost_usd": f.CostUSD}}
	for _, c := range p.rules {
		v, _, err := c.prg.Eval(vars)
		if err != nil {
			return c.Rule, false, fmt.Errorf("rule %q: %w", c.Name, err)
		}
		b, isBool := v.(types.Bool)
		if !isBool {
			return c.Rule, false, fmt.Errorf("rule %q: the condition is a %s, not a bool", c.Name, v.Type().TypeName())
		}
		if b {
			return c.Rule, true, nil
		}
	}
	return Rule{}, false, nil
}
