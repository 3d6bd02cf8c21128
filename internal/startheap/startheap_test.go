package startheap

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// The rules are about a process's first moments, so each case runs this test binary
// again as a fresh process (child, below) and reads what it printed.
const childEnv = "STARTHEAP_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		child()
		return
	}
	os.Exit(m.Run())
}

// child allocates 10 MiB that stays live, reports the collections so far, then
// allocates garbage until a collection has happened and the setting is no longer the
// start's (its cleanup restored it), or ten seconds pass, and reports the setting.
func child() {
	var keep [][]byte
	for range 10 {
		keep = append(keep, make([]byte, 1<<20))
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("gcs-before-16MiB=%d\n", ms.NumGC)
	deadline := time.Now().Add(10 * time.Second)
	percent := current()
	for (ms.NumGC == 0 || percent == StartingHeap/runtimeMinimumHeap*100) && time.Now().Before(deadline) {
		keep[len(keep)-1] = make([]byte, 1<<20)
		runtime.Gosched()
		percent = current()
		runtime.ReadMemStats(&ms)
	}
	runtime.ReadMemStats(&ms)
	fmt.Printf("gcs=%d percent=%d live=%d\n", ms.NumGC, percent, len(keep))
}

func current() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

func runChild(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), append(env, childEnv+"=1")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return string(out)
}

func TestFirstCollectionWaitsForTheStartingHeapThenGOGCRules(t *testing.T) {
	out := runChild(t, "GOGC=")
	if !strings.Contains(out, "gcs-before-16MiB=0\n") {
		t.Errorf("a collection ran before the heap reached 16 MiB:\n%s", out)
	}
	if !strings.Contains(out, " percent=100 ") {
		t.Errorf("after the first collection the setting is not back to GOGC's default:\n%s", out)
	}
}

func TestGOGCInTheEnvironmentIsLeftAlone(t *testing.T) {
	out := runChild(t, "GOGC=50")
	if strings.Contains(out, "gcs-before-16MiB=0\n") {
		t.Errorf("GOGC=50 should collect before 10 MiB:\n%s", out)
	}
	if !strings.Contains(out, " percent=50 ") {
		t.Errorf("GOGC=50 was not kept:\n%s", out)
	}
}
