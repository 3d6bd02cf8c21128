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

// A process start collects no garbage: package init allocates ~5 MB that mostly stays
// live, and the runtime's first collection would come at 4 MiB, in the middle of init
// (internal/startheap moves it to 16 MiB). `agenthost --help` under GODEBUG=gctrace=1
// prints no collection, and startheap initialises before the heap could reach 4 MiB.
func TestE2E_AProcessStartCollectsNoGarbage(t *testing.T) {
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "--help")
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1,inittrace=1", "GOGC=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("agenthost --help: %v\n%s", err, stderr.Bytes())
	}
	var before int // bytes allocated by the inits that ran before startheap's
	found := false
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "gc 1 @") {
			t.Errorf("a garbage collection ran during the start: %s", line)
		}
		f := strings.Fields(line)
		if found || len(f) != 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		if f[1] == "github.com/agenthost/agenthost/internal/startheap" {
			found = true
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("inittrace line %q: %v", line, err)
		}
		before += n
	}
	if !found {
		t.Fatalf("internal/startheap's init is not in the trace:\n%s", stderr.Bytes())
	}
	if before > 2<<20 {
		t.Errorf("the inits before startheap's allocate %d bytes, too close to the runtime's first collection at 4 MiB", before)
	}
}
