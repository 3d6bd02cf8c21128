package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/spf13/pflag"
)

// README documents every flag of `run` (and `serve`): the help and the README agree.
func TestReadmeNamesEveryRunAndServeFlag(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	root := newRoot()
	for _, name := range []string{"run", "serve"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if !regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `\b`).MatchString(readme) {
				t.Errorf("README.md does not document %s --%s (%s)", name, f.Name, f.Usage)
			}
		})
	}
}
