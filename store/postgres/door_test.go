package postgres

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// doorFile is the one file allowed to hold the raw pool (door.go).
const doorFile = "door.go"

// Every statement of the package goes through the door (door.go), which marks an
// unreachable database's errors StoreUnavailable: no file of the package but the door
// imports pgxpool, reads the pool field, begins a transaction or connects with pgx's own
// functions, takes a connection, or calls a pgx.Tx/pgx.Rows method the door does not mark.
// Each such use could return an unmarked error (a list read's rows.Err was one, issue 47).
func TestEveryStatementGoesThroughTheDoorThatMarksUnavailable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if name == doorFile || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range aroundTheDoor(t, name, src) {
			t.Errorf("%s: goes around the door (door.go): %s", name, v)
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("checked %d files of the package: the glob did not find them", checked)
	}
}

// The check itself finds each way around the door, so the test above cannot pass by
// seeing nothing.
func TestTheDoorCheckFindsEachWayAround(t *testing.T) {
	cases := map[string]string{
		"the pool field":     `func f(s *Store) { s.db.pool.Exec(ctx, "") }`,
		"a pgxpool import":   `import "github.com/jackc/pgx/v5/pgxpool"; var p *pgxpool.Pool`,
		"pgx.BeginFunc":      `import "github.com/jackc/pgx/v5"; func f(b pgx.TxBeginner) { pgx.BeginFunc(ctx, b, nil) }`,
		"pgx.Connect":        `import "github.com/jackc/pgx/v5"; func f() { pgx.Connect(ctx, "") }`,
		"a raw connection":   `func f(tx pgx.Tx) { tx.Conn().Exec(ctx, "") }`,
		"an unmarked method": `func f(tx pgx.Tx) { tx.SendBatch(ctx, nil) }`,
	}
	for what, body := range cases {
		if v := aroundTheDoor(t, "case.go", []byte("package postgres\n"+body)); len(v) == 0 {
			t.Errorf("%s: not found in %s", what, body)
		}
	}
	clean := `import "github.com/jackc/pgx/v5"; func f(s *Store) error { return s.db.BeginFunc(ctx, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, ""); return err }) }`
	if v := aroundTheDoor(t, "clean.go", []byte("package postgres\n"+clean)); len(v) != 0 {
		t.Errorf("a statement through the door is reported: %v", v)
	}
}

// unmarked are the methods of pgx's pool, connections, transactions and rows whose errors
// the door does not mark, or that hand out what it does not wrap.
var unmarked = map[string]bool{"Acquire": true, "Conn": true, "Hijack": true, "SendBatch": true, "Prepare": true, "LargeObjects": true, "BeginTx": true}

// rawOpeners are pgx's and pgconn's functions that begin a transaction on, or open, what
// the door did not hand out.
var rawOpeners = map[string]bool{"BeginFunc": true, "BeginTxFunc": true, "Connect": true, "ConnectConfig": true, "ConnectWithOptions": true}

// aroundTheDoor parses a Go file of the package and says each use in it that goes around
// the door.
func aroundTheDoor(t *testing.T, name string, src []byte) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	report := func(n ast.Node, what string) {
		found = append(found, fset.Position(n.Pos()).String()+": "+what)
	}
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/jackc/pgx/v5/pgxpool" {
			report(imp, "imports pgxpool")
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			sel := n.Sel.Name
			if x, ok := n.X.(*ast.Ident); ok && (x.Name == "pgx" || x.Name == "pgconn") && rawOpeners[sel] {
				report(n, x.Name+"."+sel)
			}
			if sel == "pool" {
				report(n, "the raw pool ."+sel)
			}
		case *ast.CallExpr:
			if s, ok := n.Fun.(*ast.SelectorExpr); ok && unmarked[s.Sel.Name] {
				report(n, "."+s.Sel.Name+"(), which the door does not mark")
			}
		}
		return true
	})
	return found
}
