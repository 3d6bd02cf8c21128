package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"google.golang.org/protobuf/types/known/structpb"
)

// Expressions are CEL over four variables: inputs (the run's inputs), steps (a map from
// step id to {"output": …, "status": …} of the steps that ended), and, in a for_each
// step's arguments and prompt, item and index. JSON numbers are CEL doubles.
// Both environments are built on first use, not at package init: a process that never
// compiles an expression (most commands) does not pay for them.
var (
	envPlain = sync.OnceValue(func() *cel.Env { return mustEnv(false) })
	envItem  = sync.OnceValue(func() *cel.Env { return mustEnv(true) })
)

func mustEnv(item bool) *cel.Env {
	opts := []cel.EnvOption{
		cel.Variable("inputs", cel.DynType),
		cel.Variable("steps", cel.MapType(cel.StringType, cel.DynType)),
		ext.Strings(), ext.Lists(), ext.Math(), ext.Encoders(),
	}
	if item {
		opts = append(opts, cel.Variable("item", cel.DynType), cel.Variable("index", cel.IntType))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		panic(err)
	}
	return env
}

// compileExpr parses and checks one CEL expression.
func compileExpr(expr string, item bool) (cel.Program, error) {
	env := envPlain()
	if item {
		env = envItem()
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("expression %q does not compile: %s", expr, strings.ReplaceAll(iss.Err().Error(), "\n", " "))
	}
	prg, err := env.Program(ast, cel.CostLimit(1_000_000))
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", expr, err)
	}
	return prg, nil
}

// eval runs a compiled expression and returns its value as plain Go (JSON-shaped).
func eval(prg cel.Program, vars map[string]any) (any, error) {
	v, _, err := prg.Eval(vars)
	if err != nil {
		return nil, err
	}
	return native(v)
}

func native(v ref.Val) (any, error) {
	if v == types.NullValue {
		return nil, nil
	}
	pv, err := v.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
	if err != nil {
		return nil, fmt.Errorf("value of type %s is not JSON: %w", v.Type().TypeName(), err)
	}
	return pv.(*structpb.Value).AsInterface(), nil
}

// template is a string with ${expr} parts. One that is a single ${expr} and nothing
// else evaluates to the expression's value (a list stays a list); otherwise the parts
// are joined as text, strings as they are and other values as JSON. $${ writes ${.
type template struct {
	lits  []string      // len(exprs)+1 literal pieces
	exprs []cel.Program // between them
	src   []string
}

func compileTemplate(s string, item bool) (template, error) {
	var t template
	var lit strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			lit.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			lit.WriteByte(s[i])
			i++
			continue
		}
		end, err := exprEnd(s, i+2)
		if err != nil {
			return t, err
		}
		src := strings.TrimSpace(s[i+2 : end])
		prg, err := compileExpr(src, item)
		if err != nil {
			return t, err
		}
		t.lits = append(t.lits, lit.String())
		lit.Reset()
		t.exprs = append(t.exprs, prg)
		t.src = append(t.src, src)
		i = end + 1
	}
	t.lits = append(t.lits, lit.String())
	return t, nil
}

// exprEnd finds the } closing a ${ whose expression starts at i, skipping braces of map
// literals and anything inside quotes.
func exprEnd(s string, i int) (int, error) {
	depth := 0
	for j := i; j < len(s); j++ {
		switch c := s[j]; c {
		case '"', '\'':
			for j++; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' {
					j++
				}
			}
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return j, nil
			}
			depth--
		}
	}
	return 0, fmt.Errorf("unclosed ${ in %q", s)
}

func (t template) isExpr() bool { return len(t.exprs) > 0 }

func (t template) eval(vars map[string]any) (any, error) {
	if len(t.exprs) == 1 && t.lits[0] == "" && t.lits[1] == "" {
		return t.evalOne(0, vars)
	}
	var b strings.Builder
	for i, lit := range t.lits {
		b.WriteString(lit)
		if i == len(t.exprs) {
			break
		}
		v, err := t.evalOne(i, vars)
		if err != nil {
			return nil, err
		}
		if s, ok := v.(string); ok {
			b.WriteString(s)
			continue
		}
		j, _ := json.Marshal(v)
		b.WriteString(string(j))
	}
	return b.String(), nil
}

func (t template) evalOne(i int, vars map[string]any) (any, error) {
	v, err := eval(t.exprs[i], vars)
	if err != nil {
		return nil, fmt.Errorf("${%s}: %w", t.src[i], err)
	}
	return v, nil
}

// compileValue compiles every string of a TOML value (arguments) as a template; the
// result has the same shape with templates in place of strings that hold ${.
func compileValue(v any, item bool, refs func(string) error) (any, error) {
	switch x := v.(type) {
	case string:
		t, err := compileTemplate(x, item)
		if err != nil {
			return nil, err
		}
		if !t.isExpr() {
			return t.lits[0], nil
		}
		if err := refs(x); err != nil {
			return nil, err
		}
		return t, nil
	case Table:
		return compileValue(map[string]any(x), item, refs)
	case map[string]any:
		out := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			c, err := compileValue(x[k], item, refs)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := compileValue(e, item, refs)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = c
		}
		return out, nil
	case []map[string]any: // the TOML decoder's array of tables
		out := make([]any, len(x))
		for i, e := range x {
			c, err := compileValue(e, item, refs)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

// hasTemplate says whether v (compileValue's result) holds a template.
func hasTemplate(v any) bool {
	switch x := v.(type) {
	case template:
		return true
	case map[string]any:
		for _, e := range x {
			if hasTemplate(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasTemplate(e) {
				return true
			}
		}
	}
	return false
}

// evalValue is compileValue's result with every template evaluated.
func evalValue(v any, vars map[string]any) (any, error) {
	switch x := v.(type) {
	case template:
		return x.eval(vars)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := evalValue(e, vars)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := evalValue(e, vars)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

var errNotBool = errors.New("the condition is not a bool")
