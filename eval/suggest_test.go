package eval

import (
	"os"
	"path/filepath"
	"testing"
)

// A dataset that is not there gets the nearest one beside it, or the list of them.
func TestLoadMissingDatasetSuggestsTheNearest(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"smoke.yaml", "regression.jsonl", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Load(filepath.Join(dir, "smoke.yml"))
	if want := "; did you mean " + filepath.Join(dir, "smoke.yaml") + "?"; err == nil || !hasSuffix(err.Error(), want) {
		t.Fatalf("err = %v, want suffix %q", err, want)
	}
	_, err = Load(filepath.Join(dir, "nightly.jsonl"))
	if want := "; datasets in " + dir + ": regression.jsonl, smoke.yaml"; err == nil || !hasSuffix(err.Error(), want) {
		t.Fatalf("err = %v, want suffix %q", err, want)
	}
	if !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("the error no longer says the file does not exist: %v", err)
	}
}

func hasSuffix(s, suf string) bool { return len(s) >= len(suf) && s[len(s)-len(suf):] == suf }

func unwrapAll(err error) error {
	for {
		type unwrapper interface{ Unwrap() error }
		u, ok := err.(unwrapper)
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}
