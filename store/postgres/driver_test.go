package postgres

import (
	"context"
	"testing"

	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/pgtest"
)

// Importing the package is what makes [store] kind = "postgres" open: the store
// package's driver for the kind is this package's Open, on a real server.
func TestImportingThePackageRegistersThePostgresStoreKind(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenDriver(ctx, "postgres", pgtest.Start(t).NewDatabase(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := st.(*Store)
	if !ok {
		t.Fatalf("the postgres driver opened a %T", st)
	}
	defer s.Close()
	if err := s.KVSet(ctx, "p", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.KVGet(ctx, "p", "k"); err != nil || !ok || string(v) != "v" {
		t.Fatalf("kv: %q %v %v", v, ok, err)
	}
}
