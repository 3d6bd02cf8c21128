package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A pre-initialised Go guest keeps, from its snapshot, which preopened directory
// number is which guest path (the Go runtime reads the preopens once, at init). The
// mounts are therefore made in one fixed order, the snapshot's, at every instance:
// in the map's order, a fresh instance could see /ro's files at /data and write to
// /ro through /data's number. Four mounts, eight fresh instances: each reads every
// mount's own file at its own path and cannot write to the read-only one.
func TestMountsKeepTheirGuestPathsInEveryPreinitialisedInstance(t *testing.T) {
	base := t.TempDir()
	paths := map[string]string{}
	for _, m := range []string{"a", "b", "c", "ro"} {
		dir := filepath.Join(base, m)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "who.txt"), m)
		host := dir
		if m == "ro" {
			host = "ro:" + dir
		}
		paths[host] = "/" + m
	}
	p := load(t, newTestRuntime(t), Config{Name: "guest", Wasm: fixtures.guest, Preinit: PreinitOn,
		Permissions: Permissions{Timeout: 20 * time.Second, Isolation: IsolationCall, AllowedPaths: paths},
		Tools:       tools(map[string]string{"fsop": ""})})
	if ok, why := p.Preinitialised(); !ok {
		t.Fatalf("the guest is not pre-initialised: %s", why)
	}
	ft := &fsTree{p: p}
	for i := range 8 {
		for _, m := range []string{"a", "b", "c", "ro"} {
			if res := ft.op(t, "read", "/"+m+"/who.txt", ""); res.IsError || res.Text() != m {
				t.Fatalf("instance %d: /%s/who.txt read %q (error %v), want %q", i, m, res.Text(), res.IsError, m)
			}
		}
		ft.wantFail(t, "write", "/ro/new.txt", "x", "Read-only file system")
	}
	if _, err := os.Stat(filepath.Join(base, "ro", "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("a write reached the read-only mount: %v", err)
	}
}
