package host

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The host links no database client: a PostgreSQL store is the store.Driver that
// store/postgres registers in the programs that import it (cmd/agenthost), so an
// embedding program on SQLite, and every binary that does not open such a store, does
// not carry pgx.
func TestHostLinksNoDatabaseClientItself(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/jackc/") || p == "github.com/agenthost/agenthost/store/postgres" {
			t.Errorf("host depends on %s", p)
		}
	}
}

// In a program that did not import store/postgres (this test binary), a manifest with
// a postgres store is refused by Open with what to import, before anything starts.
func TestAPostgresStoreWithoutItsDriverLinkedSaysWhatToImport(t *testing.T) {
	p := filepath.Join(t.TempDir(), "agent.toml")
	if err := os.WriteFile(p, []byte("[store]\nkind = \"postgres\"\nurl = \"postgres://127.0.0.1:1/x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := Open(context.Background(), Options{Manifest: p, NoProvider: true, CacheDir: wasmCache})
	if h != nil || err == nil || err.Error() != "a postgres store is not linked into this program: import github.com/agenthost/agenthost/store/postgres" {
		t.Fatalf("Open = %v, %v", h, err)
	}
}
