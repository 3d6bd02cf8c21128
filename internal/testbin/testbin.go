package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Bin is a binary built from a main package of this module.
type Bin struct {
	// Pkg is the package's directory from the module root: "cmd/agenthost".
	Pkg string
	// Name is the file name in Dir; "" is the last element of Pkg, with ".wasm" for Wasm.
	Name string
	// Wasm builds for GOOS=wasip1 GOARCH=wasm; CShared with -buildmode=c-shared (a
	// reactor module, as plugins are built).
	Wasm, CShared bool
}

// The binaries most tests use.
var (
	Agenthost = Bin{Pkg: "cmd/agenthost"}
	Scripted  = Bin{Pkg: "cmd/agenthost-provider-scripted"}
	OpenAI    = Bin{Pkg: "cmd/agenthost-provider-openai"}
	Anthropic = Bin{Pkg: "cmd/agenthost-provider-anthropic"}
	// Sigstore is the keyless verifier agenthost starts beside itself (ociplugin/keyless).
	Sigstore = Bin{Pkg: "cmd/agenthost-sigstore"}
)

func (b Bin) name() string {
	switch {
	case b.Name != "":
		return b.Name
	case b.Wasm:
		return path.Base(b.Pkg) + ".wasm"
	}
	return path.Base(b.Pkg)
}

var (
	mu    sync.Mutex
	dir   string
	built = map[Bin]*result{}
)

type result struct {
	once sync.Once
	path string
	err  error
}

// Build returns the path of b in Dir, building it on the first call for b; concurrent
// and later calls wait for that build and share its outcome, failure included.
func Build(b Bin) (string, error) {
	mu.Lock()
	r := built[b]
	if r == nil {
		r = &result{}
		built[b] = r
	}
	mu.Unlock()
	r.once.Do(func() { r.path, r.err = build(b) })
	return r.path, r.err
}

// Path is Build for a test: a failed build fails tb.
func Path(tb testing.TB, b Bin) string {
	tb.Helper()
	p, err := Build(b)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Must is Build for TestMain: a failed build ends the process with its message.
func Must(b Bin) string {
	p, err := Build(b)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		Cleanup()
		os.Exit(1)
	}
	return p
}

// Dir is the directory every binary of this process is built into, made on first use.
// Tests may put other files there (a binary's neighbours).
func Dir() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if dir == "" {
		d, err := os.MkdirTemp("", "agenthost-testbin-")
		if err != nil {
			return "", err
		}
		dir = d
	}
	return dir, nil
}

// Cleanup removes Dir and everything in it. TestMain calls it after m.Run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
	dir, built = "", map[Bin]*result{}
}

// Root is the module's root directory (where go.mod is), found from the working
// directory, which `go test` sets to the package's.
func Root() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("testbin: no go.mod above the working directory")
		}
		d = parent
	}
}

func build(b Bin) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	d, err := Dir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(d, b.name())
	// -trimpath as `make build` compiles (scripts/build.sh), so that the tests reuse the
	// packages it compiled rather than compiling every one again.
	args := []string{"run", "-trimpath", "-exec", "cp"}
	if b.CShared {
		args = append(args, "-buildmode=c-shared")
	}
	// cp is given the built executable, then out.
	cmd := exec.Command("go", append(args, "./"+strings.TrimPrefix(b.Pkg, "./"), out)...)
	cmd.Dir = root
	// CGO_ENABLED=0 as scripts/build.sh builds: the cgo setting is part of every
	// package's cache key (it changes which files net and os/user compile, and so the
	// export data of everything above them), so with the machine's default (1) the tests
	// compiled the whole tree a second time beside `make build`'s.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b.Wasm {
		cmd.Env = append(cmd.Env, "GOOS=wasip1", "GOARCH=wasm")
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbin: build %s: %v\n%s", b.Pkg, err, msg)
	}
	return out, nil
}

// ShareWasmCache points AGENTHOST_CACHE_DIR, for this process and every process it
// starts, at one Wasm compilation cache shared by every test process of the machine,
// and returns it. Each test writes its own manifest, and each manifest's default cache
// (.agenthost/cache beside it) starts empty, so without this every test compiled every
// plugin it loads again: seconds of CPU per module, far more under -race, where the
// compiler itself runs instrumented. Sharing is safe for the reasons host.CacheDirFromEnv
// gives (entries keyed by the module's sha256 and the runtime's version, written by
// rename). The directory outlives the run on purpose, like the Go build cache: the next
// run compiles only what changed. A test about the cache itself clears the variable
// (t.Setenv("AGENTHOST_CACHE_DIR", "")). The agenthost processes a test starts share it
// with the test processes only when both name the same wazero version, which `make
// test` sees to (the Makefile's TESTLDFLAGS); a plain go test binary says "dev".
func ShareWasmCache() string {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("agenthost-test-wasm-cache-%d", os.Getuid()))
	os.Setenv("AGENTHOST_CACHE_DIR", dir)
	return dir
}
