package startheap

import (
	"os"
	"runtime"
	"runtime/debug"
)

// StartingHeap is the heap size at which the first collection happens. The runtime
// collects first at 4 MiB × GOGC/100, so GOGC=400 during the start puts it here.
const StartingHeap = 16 << 20

const runtimeMinimumHeap = 4 << 20

// sentinel is an object nothing refers to: its cleanup runs after the first collection,
// which restores the collector's setting. It is larger than the runtime's tiny
// allocation size (16 bytes), whose blocks can keep an object alive for good.
type sentinel [64]byte

func init() {
	if os.Getenv("GOGC") != "" { // the runtime, too, reads an empty GOGC as unset
		return
	}
	prev := debug.SetGCPercent(StartingHeap / runtimeMinimumHeap * 100)
	runtime.AddCleanup(new(sentinel), func(p int) { debug.SetGCPercent(p) }, prev)
}
