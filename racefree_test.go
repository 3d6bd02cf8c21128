//go:build race

package agenthost_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// racefreePkgs reads the Makefile's RACEFREE_PKGS: the package patterns `make test`
// compiles without race instrumentation (backslash-continued lines).
func racefreePkgs(makefile string) ([]string, error) {
	var pkgs []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(makefile))
	for sc.Scan() {
		line := sc.Text()
		if !in {
			rest, ok := strings.CutPrefix(line, "RACEFREE_PKGS :=")
			if !ok {
				continue
			}
			line, in = rest, true
		}
		more := strings.HasSuffix(strings.TrimSpace(line), `\`)
		pkgs = append(pkgs, strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), `\`))...)
		if !more {
			break
		}
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("Makefile: no RACEFREE_PKGS")
	}
	return pkgs, nil
}

// matchPattern reports whether a package path matches a `go` package pattern, as
// -gcflags=pattern=flags applies it: "..." matches any string, and "x/..." matches x too.
func matchPattern(pattern, path string) bool {
	re := regexp.QuoteMeta(pattern)
	if rest, ok := strings.CutSuffix(re, `/\.\.\.`); ok {
		re = rest + `(/\.\.\.)?`
	}
	re = strings.ReplaceAll(re, `\.\.\.`, `.*`)
	return regexp.MustCompile(`^` + re + `$`).MatchString(path)
}

// goList runs the go command and returns its output, or its error with what it said.
func goList(args ...string) (string, error) {
	var stderr strings.Builder
	cmd := exec.Command("go", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// isSync reports whether a function synchronises: an uninstrumented copy of one hides
// its happens-before edges from the race detector (its atomics are plain moves).
func isSync(name string) bool {
	for _, pkg := range []string{"sync.", "internal/sync.", "sync/atomic."} {
		if strings.HasPrefix(name, pkg) {
			return true
		}
	}
	return false
}

// tieOK names the sync functions a RACEFREE package may define exactly as large as the
// instrumented copy. On a tie the linker keeps the copy it loads first: os's, since os is
// loaded long before modernc.org/libc by any program of ours (checked on host's race test
// binary: its copies call sync/atomic, as instrumented ones do). They are os.File's
// directory-read state; ruling the tie out would mean instrumenting libc, which measured
// about twice SQLite's CPU.
var tieOK = map[string]bool{
	"sync/atomic.(*Pointer[go.shape.struct { os.mu sync.Mutex; os.buf *[]uint8; os.nbuf int; os.bufp int }]).CompareAndSwap": true,
	"sync/atomic.(*Pointer[go.shape.struct { os.mu sync.Mutex; os.buf *[]uint8; os.nbuf int; os.bufp int }]).Store":          true,
}

// syncSyms returns, per archive, the synchronising functions it defines and their
// sizes, from one `go tool nm -size` over all of them: each line is the archive (and
// member), a colon and a tab, then address, size, kind and name.
func syncSyms(t *testing.T, archives []string) map[string]map[string]int {
	if len(archives) < 2 {
		t.Fatalf("want several archives (nm names the archive only then), got %d", len(archives))
	}
	out, err := exec.Command("go", append([]string{"tool", "nm", "-size"}, archives...)...).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	syms := map[string]map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		archive, rest, ok := strings.Cut(line, ":\t")
		if !ok || !strings.Contains(rest, " T ") {
			continue
		}
		archive, _, _ = strings.Cut(archive, "(")
		f := strings.Fields(rest) // address, size, kind, then the name's words
		if len(f) < 4 || f[2] != "T" {
			continue
		}
		name := strings.Join(f[3:], " ")
		if !isSync(name) {
			continue
		}
		if syms[archive] == nil {
			syms[archive] = map[string]int{}
		}
		n, _ := strconv.Atoi(f[1])
		syms[archive][name] = max(syms[archive][name], n)
	}
	return syms
}

// TestRacefreePackagesLeaveNoUninstrumentedSyncInTheBinary holds the Makefile's
// RACEFREE_PKGS to what makes them safe. A package compiled with -race=false also
// compiles, uninstrumented, each std generic it instantiates or inlines (sync.Map's
// HashTrieMap core, atomic.Pointer[T]); the linker keeps one copy of such a duplicate
// per program, the largest (cmd/link's loader), so an uninstrumented copy that is larger
// serves every caller, ours included, and the detector loses that primitive's
// happens-before edges program-wide. With the whole of wazero uncompiled that way,
// sync.Map's Load was wazero's copy and encoding/json's field cache raced in host's
// tests. So: every sync, internal/sync or sync/atomic function such a package defines must
// also be defined, larger, by an instrumented package of the same build.
func TestRacefreePackagesLeaveNoUninstrumentedSyncInTheBinary(t *testing.T) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := racefreePkgs(string(mk))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := goList("list", "-deps", "-f", "{{.ImportPath}}", "./...")
	if err != nil {
		t.Fatal(err)
	}
	var matched []string // the packages of our build RACEFREE_PKGS names
	for _, p := range strings.Fields(ours) {
		if slices.ContainsFunc(pkgs, func(pattern string) bool { return matchPattern(pattern, p) }) {
			matched = append(matched, p)
		}
	}
	args := []string{"list", "-race", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}\t{{.DepOnly}}"}
	for _, p := range pkgs {
		args = append(args, "-gcflags="+p+"=-race=false") // the flags of `make test`
	}
	out, err := goList(append(args, matched...)...)
	if err != nil {
		t.Fatal(err)
	}
	pkgOf, racefree := map[string]string{}, map[string]bool{}
	var archives []string
	named := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || f[1] == "" {
			continue
		}
		pkgOf[f[1]] = f[0]
		racefree[f[1]] = f[2] == "false" // named by RACEFREE_PKGS, not only a dependency
		archives = append(archives, f[1])
		if racefree[f[1]] {
			named++
		}
	}
	uninstrumented := map[string]map[string]int{} // package -> its sync functions
	largest := map[string]int{}                   // sync function -> largest instrumented copy
	for archive, syms := range syncSyms(t, archives) {
		if racefree[archive] {
			uninstrumented[pkgOf[archive]] = map[string]int{}
		}
		for sym, size := range syms {
			switch {
			case racefree[archive]:
				uninstrumented[pkgOf[archive]][sym] = size
			default:
				largest[sym] = max(largest[sym], size)
			}
		}
	}
	if named == 0 || named != len(matched) {
		t.Fatalf("go list -export found %d of the %d packages RACEFREE_PKGS names:\n%s", named, len(matched), out)
	}
	for pkg, syms := range uninstrumented {
		for sym, size := range syms {
			if largest[sym] < size || largest[sym] == size && !tieOK[sym] {
				t.Errorf("%s (RACEFREE_PKGS) defines %s uninstrumented, %d bytes, and no instrumented copy is larger (%d): the binary would link it; compile %s with the detector", pkg, sym, size, largest[sym], pkg)
			}
		}
	}
}
