package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzManifest feeds arbitrary text to the manifest decoder: it must return a manifest
// or an error, never panic, and every error it returns for bad text must be a
// *Error naming the file (the contract of Load); an accepted one has its defaults
// and names only the providers it defines. Seeds:
// testdata/fuzz/FuzzManifest (the repository's agent.toml and workflow example, the test manifest, the
// values of hole 10 and broken syntax).
func FuzzManifest(f *testing.F) {
	f.Add([]byte(goodManifest))
	for _, seed := range []string{"../agent.toml", "../examples/workflows/agent.toml"} {
		if b, err := os.ReadFile(seed); err == nil {
			f.Add(b)
		}
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "calc.wasm"), []byte("\x00asm fake"), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "prov"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(dir, "agent.toml")
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decode(path, data, LockOff)
		if err != nil {
			var me *Error
			if !errors.As(err, &me) || me.File != path {
				t.Fatalf("error %v (%T) is not a ManifestError naming the file", err, err)
			}
			return
		}
		// A manifest may name no provider (plugins call, mcp serve of tools only), but
		// an accepted one has its store's default and names only providers it defines.
		if m.Store.Kind == "" {
			t.Fatalf("accepted manifest lacks the store's default: %+v", m.Store)
		}
		for _, p := range m.Agent.Provider {
			if _, ok := m.Providers[p]; !ok {
				t.Fatalf("accepted manifest names undefined provider %q", p)
			}
		}
	})
}
