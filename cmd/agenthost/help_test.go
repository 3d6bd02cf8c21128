package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// walk calls f on every command of the tree, the root included, with cobra's own help
// and version flags added as Execute adds them.
func walk(t *testing.T, f func(c *cobra.Command)) {
	t.Helper()
	root := newRoot()
	root.InitDefaultVersionFlag()
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		f(c)
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
}

func helpText(c *cobra.Command) string { return c.Short + "\n" + c.Long + "\n" + c.Example }

var (
	flagMention = regexp.MustCompile("(?:^|[\\s(\\[`\"',|])--([a-z][a-z0-9-]*)")
	// --name KEY=VALUE: a metavar with "=" that the flag's own usage must share, so that
	// help naming an existing flag with another flag's argument (--config KEY=VALUE for
	// --set) is caught too.
	flagWithPair = regexp.MustCompile(`--([a-z][a-z0-9-]*)[ =]([A-Z][A-Z0-9_]*=[A-Z][A-Z0-9_]*)`)
)

// Every --flag that a command's Short or Long names is a flag of that command (its own or
// inherited), and one shown with a KEY=VALUE argument takes one. In an Example each
// `agenthost …` invocation is checked against the command it runs.
func TestHelpNamesOnlyFlagsTheCommandHas(t *testing.T) {
	root := newRoot()
	root.InitDefaultVersionFlag()
	walk(t, func(c *cobra.Command) {
		checkFlags(t, c, c, c.Short+"\n"+c.Long)
		for _, inv := range invocation.FindAllString(c.Example, -1) {
			words := strings.Fields(strings.NewReplacer(`"`, " ", `'`, " ").Replace(inv))[1:]
			target, _, err := root.Find(words)
			if err != nil || target == root && len(words) > 0 && !strings.HasPrefix(words[0], "-") {
				t.Errorf("%q example %q runs no command: %v", c.CommandPath(), inv, err)
				continue
			}
			target.InitDefaultHelpFlag()
			checkFlags(t, c, target, inv)
		}
	})
}

// invocation is one `agenthost …` command line of an Example, up to a pipe, a && or a comment.
var invocation = regexp.MustCompile(`\bagenthost\b[^|&;#\n)]*`)

func checkFlags(t *testing.T, in, c *cobra.Command, text string) {
	t.Helper()
	lookup := func(name string) *pflag.Flag {
		if f := c.Flags().Lookup(name); f != nil {
			return f
		}
		return c.InheritedFlags().Lookup(name)
	}
	for _, m := range flagMention.FindAllStringSubmatch(text, -1) {
		if lookup(m[1]) == nil {
			t.Errorf("%q help names --%s, which %q does not have", in.CommandPath(), m[1], c.CommandPath())
		}
	}
	for _, m := range flagWithPair.FindAllStringSubmatch(text, -1) {
		if f := lookup(m[1]); f != nil && !strings.Contains(f.Usage, m[2]) {
			t.Errorf("%q help shows --%s %s, but --%s is %q", in.CommandPath(), m[1], m[2], m[1], f.Usage)
		}
	}
}

// Every command that does something shows how to use it (cobra's Examples: section).
func TestEveryRunnableCommandHasAnExample(t *testing.T) {
	n := 0
	walk(t, func(c *cobra.Command) {
		if !c.Runnable() {
			return
		}
		n++
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no Example", c.CommandPath())
		} else if !strings.Contains(c.Example, c.CommandPath()[len("agenthost "):]) {
			t.Errorf("%q: its Example does not run it:\n%s", c.CommandPath(), c.Example)
		}
	})
	if n < 10 {
		t.Fatalf("walked %d runnable commands; the tree was not walked", n)
	}
}

// The command groups a newcomer reaches first show examples of their commands too.
func TestSessionsAndMemoryHelpShowExamples(t *testing.T) {
	root := newRoot()
	for _, name := range []string{"sessions", "memory"} {
		c, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(c.Example, "agenthost "+name+" ") {
			t.Errorf("%s --help has no example of its commands: %q", name, c.Example)
		}
	}
}

// plural counts in words: "1 run", "2 runs", "1 memory", "3 memories".
func TestPluralCountsInWords(t *testing.T) {
	for got, want := range map[string]string{plural(1, "run"): "1 run", plural(2, "run"): "2 runs", plural(0, "tool"): "0 tools",
		plural(1, "memory"): "1 memory", plural(3, "memory"): "3 memories"} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// A user reads --help where the repository is not: help never sends them to a file of it.
func TestHelpPointsAtNoRepositoryPath(t *testing.T) {
	repoPath := regexp.MustCompile(`\b[\w-]+/[\w./-]*\.md\b|\b(host|loop|sandbox|providers|plugins/sdk|store|telemetry)/`)
	walk(t, func(c *cobra.Command) {
		if m := repoPath.FindString(helpText(c)); m != "" {
			t.Errorf("%q help points at %q", c.CommandPath(), m)
		}
	})
}

// `agenthost --version` prints exactly what `agenthost version` prints.
func TestE2E_VersionFlagPrintsTheVersion(t *testing.T) {
	bin := filepath.Join(binDir, "agenthost")
	flag, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	sub, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(flag) != string(sub) || !strings.HasPrefix(string(flag), "agenthost ") {
		t.Fatalf("--version %q, version %q", flag, sub)
	}
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// On a terminal the transcript is coloured, unless NO_COLOR is set (to any value). The
// terminal is a real pseudo-terminal, from util-linux's script(1).
func TestE2E_NoColorTurnsOffTranscriptColours(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("script(1) (util-linux, bsdutils on Debian) gives the test a terminal: %v", err)
	}
	e := newEnv(t, "", "", [2]string{"scripted", `{"repeat": true, "turns": [
	  {"tool_calls": [{"id": "c1", "name": "calc", "arguments": "{\"expression\":\"6*7\"}"}]},
	  {"text": "It is {{result c1}}."}]}`})
	onTerminal := func(noColor string) string {
		t.Helper()
		line := strings.Join([]string{filepath.Join(binDir, "agenthost"), "-c", e.manifest, "run", "go"}, " ")
		cmd := exec.Command(script, "-qec", line, "/dev/null")
		cmd.Dir = e.dir
		cmd.Env = append(os.Environ(), "NO_COLOR="+noColor, "TERM=xterm")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("NO_COLOR=%q: %v\n%q", noColor, err, out)
		}
		if !strings.Contains(string(out), "It is 42.") {
			t.Fatalf("NO_COLOR=%q: no final answer in %q", noColor, out)
		}
		return string(out)
	}
	if out := onTerminal(""); !sgr.MatchString(out) {
		t.Fatalf("no colour on a terminal without NO_COLOR (so the test shows nothing): %q", out)
	}
	if out := onTerminal("1"); sgr.MatchString(out) {
		t.Fatalf("NO_COLOR=1 still colours: %q", sgr.FindAllString(out, -1))
	}
}
