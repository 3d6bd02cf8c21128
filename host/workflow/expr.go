package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"
	"google.golang.org/protobuf/types/known/structpb"
)

// The CEL variables a workflow expression sees: inputs (the run's inputs), steps (by
// id: {output, status}), and in a for_each step's templates item and index.
func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("inputs", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("steps", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("item", cel.DynType),
		cel.Variable("index", cel.IntType),
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(), // join, split, replace, format, …
	)
}

// maxCost bounds an expression's evaluation (CEL's cost units): a workflow definition is
// configuration, but a list comprehension over a large tool output must not hang a run.
const maxCost = 1_000_000

func program(env *cel.Env, expr string) (cel.Program, error) {
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("CEL %q: %w", expr, iss.Err())
	}
	return env.Program(ast, cel.CostLimit(maxCost))
}

// template is a text with ${expr} parts. A text that is one ${expr} and nothing else
// gives the expression's value as it is (a list stays a list); otherwise the values are
// written into the text (strings as they are, anything else as JSON).
type template struct {
	lits  []string // len(progs)+1 literal pieces around the expressions
	progs []cel.Program
}

func parseTemplate(env *cel.Env, text string) (*template, error) {
	t := &template{}
	rest := text
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			t.lits = append(t.lits, rest)
			return t, nil
		}
		end := closing(rest[i+2:])
		if end < 0 {
			return nil, fmt.Errorf("%q: ${ without its }", text)
		}
		p, err := program(env, rest[i+2:i+2+end])
		if err != nil {
			return nil, err
		}
		t.lits = append(t.lits, rest[:i])
		t.progs = append(t.progs, p)
		rest = rest[i+2+end+1:]
	}
}

// closing finds the } that closes an expression, skipping nested braces and quoted
// strings; -1 when there is none.
func closing(s string) int {
	depth, quote := 0, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '{':
			depth++
		case c == '}':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return -1
}

func (t *template) eval(vars map[string]any) (any, error) {
	if len(t.progs) == 0 {
		return t.lits[0], nil
	}
	if len(t.progs) == 1 && t.lits[0] == "" && t.lits[1] == "" {
		return evalNative(t.progs[0], vars)
	}
	var b strings.Builder
	for i, p := range t.progs {
		b.WriteString(t.lits[i])
		v, err := evalNative(p, vars)
		if err != nil {
			return nil, err
		}
		if s, ok := v.(string); ok {
			b.WriteString(s)
		} else {
			j, _ := json.Marshal(v)
			b.Write(j)
		}
	}
	b.WriteString(t.lits[len(t.lits)-1])
	return b.String(), nil
}

var jsonValue = reflect.TypeOf(&structpb.Value{})

// evalNative evaluates p and returns its value as JSON-like Go (maps, lists, float64,
// strings, bools, nil).
func evalNative(p cel.Program, vars map[string]any) (any, error) {
	out, _, err := p.Eval(vars)
	if err != nil {
		return nil, err
	}
	v, err := out.ConvertToNative(jsonValue)
	if err != nil {
		return nil, fmt.Errorf("the value is not JSON: %w", err)
	}
	return v.(*structpb.Value).AsInterface(), nil
}

func evalBool(p cel.Program, vars map[string]any) (bool, error) {
	v, err := evalNative(p, vars)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, errors.New("the condition is not a bool")
	}
	return b, nil
}

// render evaluates a value with templates in its strings (tool arguments): each string
// is replaced by its template's value, keyed by path as compileStep stored them.
func render(v any, path string, texts map[string]*template, vars map[string]any) (any, error) {
	switch x := v.(type) {
	case string:
		if t := texts[path]; t != nil {
			return t.eval(vars)
		}
		return x, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := render(e, path+"."+k, texts, vars)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := render(e, fmt.Sprintf("%s.%d", path, i), texts, vars)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}
