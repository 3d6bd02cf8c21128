package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file written by hand, with the comments, blank lines, odd spacing, quoting and
// indentation an edit must leave as they are.
const oddManifest = `# my agent
[agent]   # the entry agent
  name    = "helper"       # who
  system_prompt = """
You help.
Be "brief"."""
  max_iterations=4 # raised once already
  'provider' = "p"

[agent.plan] # empty for now

[providers.p]
command = "/bin/true" # a stand-in

# the rules
[[approvals]]
when = 'tool == "x"'   # a comment with [brackets] and = signs
decision = "allow"
`

// An edit changes one value, adds one line or one table, and leaves every other byte
// of the file as the user wrote it.
func TestEditChangesOnlyItsKeyAndKeepsCommentsAndFormatting(t *testing.T) {
	cases := []struct {
		name string
		edit func([]byte) ([]byte, error)
		want string // oddManifest with this replacement: old => new
	}{
		{"a value in place keeps its comment", func(d []byte) ([]byte, error) { return SetKey(d, "agent", "max_iterations", 8) },
			"max_iterations=4 # raised => max_iterations=8 # raised"},
		{"a new key goes after the table's last key, indented as it", func(d []byte) ([]byte, error) { return SetKey(d, "agent", "max_handoffs", 10) },
			"  'provider' = \"p\"\n =>   'provider' = \"p\"\n  max_handoffs = 10\n"},
		{"a key of an empty table goes under its header", func(d []byte) ([]byte, error) { return SetKey(d, "agent.plan", "max_replans", 4) },
			"[agent.plan] # empty for now\n => [agent.plan] # empty for now\nmax_replans = 4\n"},
		{"a new table goes at the end", func(d []byte) ([]byte, error) { return SetKey(d, "tools.web", "fallback", []string{"search"}) },
			"decision = \"allow\"\n => decision = \"allow\"\n\n[tools.web]\nfallback = [\"search\"]\n"},
		{"a prompt addition is appended to the multi-line string", func(d []byte) ([]byte, error) {
			return AppendToString(d, "agent", "system_prompt", `When "quota" fails, stop.`)
		}, "system_prompt = \"\"\"\nYou help.\nBe \"brief\".\"\"\" => system_prompt = \"\"\"\nYou help.\nBe \\\"brief\\\".\n\nWhen \\\"quota\\\" fails, stop.\"\"\""},
		{"a rule goes before the first rule", func(d []byte) ([]byte, error) {
			return PrependArrayTable(d, "approvals", [][2]any{{"when", `tool == "web"`}, {"decision", "deny"}})
		}, "# the rules\n[[approvals]] => # the rules\n[[approvals]]\nwhen = \"tool == \\\"web\\\"\"\ndecision = \"deny\"\n\n[[approvals]]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.edit([]byte(oddManifest))
			if err != nil {
				t.Fatal(err)
			}
			from, to, _ := strings.Cut(c.want, " => ")
			if want := strings.Replace(oddManifest, from, to, 1); string(got) != want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// What the line view cannot edit safely (a table written inline) is refused, not
// written wrong; a file that is not TOML is refused too.
func TestEditRefusesWhatItCannotEditLineByLine(t *testing.T) {
	inline := "agent = { name = \"a\", max_iterations = 3 }\n"
	if _, err := SetKey([]byte(inline), "agent", "max_iterations", 6); !errors.Is(err, ErrNotEditable) {
		t.Fatalf("inline table: %v", err)
	}
	dotted := "[agent]\nplan = { max_steps = 2 }\n"
	if _, err := SetKey([]byte(dotted), "agent.plan", "max_replans", 3); !errors.Is(err, ErrNotEditable) {
		t.Fatalf("inline sub-table: %v", err)
	}
	if _, err := SetKey([]byte("[agent\n"), "agent", "max_iterations", 6); err == nil {
		t.Fatal("broken TOML was edited")
	}
	got, err := SetKey([]byte("[agent]\nmax_iterations = 3"), "agent", "max_iterations", 6) // no final newline
	if err != nil || string(got) != "[agent]\nmax_iterations = 6" {
		t.Fatalf("%q %v", got, err)
	}
}

const validManifest = "[agent]\nname = \"a\"\nprovider = \"p\"\nmax_iterations = 3\n\n[providers.p]\ncommand = \"/bin/true\"\n"

// ReplaceFile writes only a manifest that loads, only over the text the edit was made
// from, and through a symlink (which stays a link); the commit runs before the file
// changes and its error leaves the file as it was.
func TestReplaceFileWritesOnlyAValidEditOverTheTextItWasMadeFrom(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agent.toml")
	write := func(s string) {
		if err := os.WriteFile(p, []byte(s), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	write(validManifest)
	old := []byte(validManifest)
	edited, err := SetKey(old, "agent", "max_iterations", 6)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReplaceFile(p, old, []byte(strings.Replace(string(edited), "max_iterations = 6", "max_iterations = -6", 1)), func() error { return nil }); err == nil ||
		!strings.Contains(err.Error(), "the edited manifest does not load") {
		t.Fatalf("invalid edit: %v", err)
	}
	write(validManifest + "# touched\n")
	if _, err := ReplaceFile(p, old, edited, func() error { t.Fatal("commit ran"); return nil }); !errors.Is(err, ErrChanged) {
		t.Fatalf("changed underneath: %v", err)
	}
	write(validManifest)
	if _, err := ReplaceFile(p, old, edited, func() error { return errors.New("audit down") }); err == nil || err.Error() != "audit down" {
		t.Fatalf("commit error: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != validManifest {
		t.Fatalf("file changed after a failed commit:\n%s", b)
	}

	real := filepath.Join(dir, "real.toml")
	os.Rename(p, real)
	if err := os.Symlink("real.toml", p); err != nil {
		t.Fatal(err)
	}
	got, err := ReplaceFile(p, old, edited, func() error { return nil })
	if err != nil || got != real {
		t.Fatalf("through a symlink: %q %v", got, err)
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link is gone: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(real); string(b) != string(edited) {
		t.Fatalf("target:\n%s", b)
	}
	if fi, _ := os.Stat(real); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if m, err := Load(p); err != nil || m.Agent.MaxIterations != 6 {
		t.Fatalf("reload: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*edit-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// Headers and keys inside a multi-line string, brackets and comments inside a multi-line
// array, are text, not statements: an edit finds the real key, and a table that exists
// only inside a string is added, not found there.
func TestEditSeesThroughMultiLineStringsAndArrays(t *testing.T) {
	src := "[agent]\nsystem_prompt = '''\n[agent.plan]\nmax_steps = 1\nmax_iterations = 9\n'''\ntools = [\n  \"a\", # [first]\n  \"b\",\n]\nmax_iterations = 3 # keep\n"
	got, err := SetKey([]byte(src), "agent", "max_iterations", 6)
	if want := strings.Replace(src, "max_iterations = 3 #", "max_iterations = 6 #", 1); err != nil || string(got) != want {
		t.Fatalf("%v\n%s", err, got)
	}
	got, err = SetKey([]byte(src), "agent.plan", "max_steps", 5)
	if err != nil || string(got) != src+"\n[agent.plan]\nmax_steps = 5\n" {
		t.Fatalf("%v\n%s", err, got)
	}
	got, err = SetKey([]byte(src), "agent", "tools", []string{"c"})
	if want := strings.Replace(src, "[\n  \"a\", # [first]\n  \"b\",\n]", `["c"]`, 1); err != nil || string(got) != want {
		t.Fatalf("%v\n%s", err, got)
	}
}
