// Package agenthost_test holds the repository's import rules as a test (as tailscale's
// dependency tests do): ARCHITECTURE.md's package table says, per package, which of the
// project's packages it may import, and this test holds `go list` to it. A package
// that imports one of ours its row does not name, a package without a row, and a row
// that names no package all fail, so the documented layering and the code cannot drift.
package agenthost_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/agenthost/agenthost/"

// rule is one row of the table: the packages it covers and what they may import
// (any: no limit, the commands).
type rule struct {
	line     int
	packages []string
	mayAll   bool
	may      []string
}

// expand turns "providers/{openai,anthropic}" into its two names.
func expand(name string) []string {
	i, j := strings.Index(name, "{"), strings.Index(name, "}")
	if i < 0 || j < i {
		return []string{name}
	}
	var out []string
	for _, alt := range strings.Split(name[i+1:j], ",") {
		out = append(out, expand(name[:i]+strings.TrimSpace(alt)+name[j+1:])...)
	}
	return out
}

// quoted returns the `backquoted` names of a table cell, expanded.
func quoted(cell string) []string {
	var out []string
	parts := strings.Split(cell, "`")
	for i := 1; i < len(parts); i += 2 {
		out = append(out, expand(parts[i])...)
	}
	return out
}

// parseRules reads the table whose header is "| package | is | must not | may import |".
func parseRules(doc string) ([]rule, error) {
	var rules []rule
	in := false
	sc := bufio.NewScanner(strings.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "| package | is | must not | may import |") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if len(rules) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			return nil, fmt.Errorf("ARCHITECTURE.md:%d: want 4 cells, got %d", n, len(cells))
		}
		r := rule{line: n, packages: quoted(cells[0])}
		switch may := strings.TrimSpace(cells[3]); may {
		case "any":
			r.mayAll = true
		case "—":
		default:
			r.may = quoted(may)
			if len(r.may) == 0 {
				return nil, fmt.Errorf("ARCHITECTURE.md:%d: may import %q names no package (want `pkg`..., — or any)", n, may)
			}
		}
		if len(r.packages) == 0 {
			return nil, fmt.Errorf("ARCHITECTURE.md:%d: the row names no package", n)
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("ARCHITECTURE.md has no package table with a may import column")
	}
	return rules, nil
}

// check returns every breach of the rules by the import graph (package → the project's
// packages it imports, both without the module prefix).
func check(rules []rule, graph map[string][]string) []string {
	var bad []string
	byPkg := map[string]rule{}
	for _, r := range rules {
		for _, p := range r.packages {
			if prev, dup := byPkg[p]; dup {
				bad = append(bad, fmt.Sprintf("%s has two rows (ARCHITECTURE.md:%d and :%d)", p, prev.line, r.line))
			}
			byPkg[p] = r
			if _, ok := graph[p]; !ok {
				bad = append(bad, fmt.Sprintf("ARCHITECTURE.md:%d names %s, which is no package", r.line, p))
			}
		}
	}
	for p, imports := range graph {
		r, ok := byPkg[p]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s has no row in ARCHITECTURE.md's package table", p))
			continue
		}
		if r.mayAll {
			continue
		}
		for _, imp := range imports {
			if !slices.Contains(r.may, imp) {
				bad = append(bad, fmt.Sprintf("%s imports %s, which its row (ARCHITECTURE.md:%d) does not allow", p, imp, r.line))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// importGraph is `go list`'s view of the module: each package's non-test imports of ours.
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if f[0]+"/" == module {
			continue // this test's own package, which has no code
		}
		p := strings.TrimPrefix(f[0], module)
		graph[p] = nil
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				graph[p] = append(graph[p], strings.TrimPrefix(imp, module))
			}
		}
	}
	return graph
}

func TestEveryImportIsOneArchitectureAllows(t *testing.T) {
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := parseRules(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range check(rules, importGraph(t)) {
		t.Error(b)
	}
}

// The checker itself: each kind of drift is reported.
func TestLayerCheckReportsEachDrift(t *testing.T) {
	rules, err := parseRules("| package | is | must not | may import |\n|---|---|---|---|\n" +
		"| `loop` | l | m | — |\n| `host` | h | m | `loop` |\n| `p/{a,b}` | p | m | `loop` |\n| `gone` | g | m | — |\n| `cmd` | c | m | any |\n")
	if err != nil {
		t.Fatal(err)
	}
	got := check(rules, map[string][]string{
		"loop": {"host"}, "host": {"loop"}, "p/a": {"loop"}, "p/b": {"host"}, "new": nil, "cmd": {"host", "p/a"},
	})
	want := []string{
		"ARCHITECTURE.md:6 names gone, which is no package",
		"loop imports host, which its row (ARCHITECTURE.md:3) does not allow",
		"new has no row in ARCHITECTURE.md's package table",
		"p/b imports host, which its row (ARCHITECTURE.md:5) does not allow",
	}
	if !slices.Equal(got, want) {
		t.Errorf("check =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
