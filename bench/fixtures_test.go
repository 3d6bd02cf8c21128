package bench

import (
	"flag"
	"fmt"
	"github.com/agenthost/agenthost/store/pgtest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/internal/testbin"
)

// fixtures are built from source once per test binary, and only under -bench: plain
// `go test ./...` stays fast and needs no toolchain beyond Go.
type fixtures struct {
	goGuest  []byte // sandbox/testdata/guest: Go, wasip1, c-shared (3.5 MB)
	cGuest   []byte // bench/testdata/cgreet: C, clang + wasi-libc reactor (1 KB)
	scripted string // the scripted provider adapter binary
	dir      string
}

func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.bench").Value.String() == "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "agenthost-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		defer testbin.Cleanup()
		defer pgtest.Stop() // the PostgreSQL server, if BenchmarkRunHistory started one
		if err := buildFixtures(dir); err != nil {
			fmt.Fprintln(os.Stderr, "bench fixtures:", err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// fx is set by TestMain before any benchmark runs and only read after.
var fx fixtures

func buildFixtures(dir string) error {
	fx.dir = dir
	goWasm, err := testbin.Build(testbin.Bin{Pkg: "sandbox/testdata/guest", Wasm: true, CShared: true})
	if err != nil {
		return err
	}
	cWasm := filepath.Join(dir, "cgreet.wasm")
	if err := run(nil, "clang", "--target=wasm32-wasi", "-mexec-model=reactor", "-O2",
		"-o", cWasm, "testdata/cgreet/greet.c"); err != nil {
		return fmt.Errorf("%w (clang and wasi-libc come with `make deps`)", err)
	}
	if fx.scripted, err = testbin.Build(testbin.Scripted); err != nil {
		return err
	}
	if fx.goGuest, err = os.ReadFile(goWasm); err != nil {
		return err
	}
	fx.cGuest, err = os.ReadFile(cWasm)
	return err
}

func run(env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %v\n%s", name, args, err, out)
	}
	return nil
}
