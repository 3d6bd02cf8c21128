package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ownInitAllocs is the most allocations one of agenthost's own packages may make in its
// package init. A registry built at init (a CEL environment, a regexp with a counted
// repetition, a parsed template) costs 500–2,500 allocations and every process pays it;
// built on first use (sync.OnceValue) only the process that needs it does. Allocations,
// unlike milliseconds, do not change with the machine's load, so the bound is exact.
const ownInitAllocs = 400

// agenthost's own packages build their registries on first use, not at package init:
// `agenthost --help` under GODEBUG=inittrace=1 shows no package of this module (nor main)
// allocating more than ownInitAllocs in its init.
func TestE2E_OwnPackagesBuildRegistriesOnFirstUseNotAtInit(t *testing.T) {
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "--help")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("agenthost --help: %v\n%s", err, stderr.Bytes())
	}
	seen := 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// "init PKG @T ms, D ms clock, B bytes, A allocs"
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[10] != "allocs" {
			continue
		}
		seen++
		if f[1] != "main" && !strings.HasPrefix(f[1], "github.com/agenthost/agenthost/") {
			continue
		}
		allocs, err := strconv.Atoi(f[9])
		if err != nil {
			t.Fatalf("inittrace line %q: %v", sc.Text(), err)
		}
		if allocs > ownInitAllocs {
			t.Errorf("%s allocates %d times in its package init (at most %d): build it on first use", f[1], allocs, ownInitAllocs)
		}
	}
	if seen < 100 {
		t.Fatalf("only %d inittrace lines in:\n%s", seen, stderr.Bytes())
	}
}
