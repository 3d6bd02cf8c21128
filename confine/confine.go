package confine

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Spec is a command's confinement: sandbox = { read = [...], write = [...], net = false }.
type Spec struct {
	Read  []string `toml:"read" json:"read,omitempty"`
	Write []string `toml:"write" json:"write,omitempty"`
	// Net false forbids TCP connections and listening; nil or true leaves the network.
	Net *bool `toml:"net" json:"net,omitempty"`
}

// Subcommand is the hidden command the re-executed host runs.
const Subcommand = "__confine"

// systemDirs are readable (and executable) by every confined command: where programs,
// their interpreters and shared libraries live. /etc is not among them.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d"}

// devices every command may use.
var devices = []string{"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/tty"}

// Available reports the kernel's Landlock ABI version, 0 when it has none.
func Available() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// Wrap rewrites cmd to run under spec through exe (the agenthost binary), which must
// handle Subcommand with Main. Paths in spec must be absolute.
func Wrap(cmd *exec.Cmd, exe string, spec Spec) error {
	if exe == "" {
		return errors.New("confinement needs the agenthost binary to start the command")
	}
	path := cmd.Path
	if lp, err := exec.LookPath(path); err == nil {
		path = lp
	}
	args := []string{exe, Subcommand}
	for _, p := range spec.Read {
		args = append(args, "-read", p)
	}
	for _, p := range spec.Write {
		args = append(args, "-write", p)
	}
	if spec.Net != nil && !*spec.Net {
		args = append(args, "-no-net")
	}
	args = append(args, "--", path)
	args = append(args, cmd.Args[1:]...)
	cmd.Path, cmd.Args, cmd.Err = exe, args, nil
	return nil
}

type list []string

func (l *list) String() string     { return fmt.Sprint(*l) }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

// Main is the Subcommand: it confines this process as args say and execs the command.
// It returns only on error.
func Main(args []string) error {
	fs := flag.NewFlagSet(Subcommand, flag.ContinueOnError)
	var read, write list
	fs.Var(&read, "read", "a path the command may read")
	fs.Var(&write, "write", "a path the command may read and write")
	noNet := fs.Bool("no-net", false, "no TCP")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmd := fs.Args()
	if len(cmd) == 0 {
		return errors.New("confine: no command")
	}
	rules := []landlock.Rule{landlock.RODirs(existing(systemDirs, true)...).IgnoreIfMissing(),
		landlock.ROFiles(existing(systemDirs, false)...).IgnoreIfMissing(),
		landlock.RWFiles(devices...).IgnoreIfMissing(), landlock.ROFiles(cmd[0])}
	rules = append(rules, pathRules(read, false)...)
	rules = append(rules, pathRules(write, true)...)
	cfg := landlock.V7.BestEffort()
	if err := cfg.RestrictPaths(rules...); err != nil {
		return fmt.Errorf("confine %s: %w", cmd[0], err)
	}
	if *noNet {
		if err := cfg.RestrictNet(); err != nil { // no rule: no TCP bind or connect at all
			return fmt.Errorf("confine %s: network: %w", cmd[0], err)
		}
	}
	return syscall.Exec(cmd[0], cmd, os.Environ())
}

// pathRules grants each path (a directory: everything under it; a file: itself).
func pathRules(paths []string, rw bool) []landlock.Rule {
	var out []landlock.Rule
	for _, p := range paths {
		st, err := os.Stat(p)
		dir := err == nil && st.IsDir()
		switch {
		case dir && rw:
			out = append(out, landlock.RWDirs(p))
		case dir:
			out = append(out, landlock.RODirs(p))
		case rw:
			out = append(out, landlock.RWFiles(p).IgnoreIfMissing())
		default:
			out = append(out, landlock.ROFiles(p).IgnoreIfMissing())
		}
	}
	return out
}

// existing is the paths that exist and are directories (dirs) or files (!dirs).
func existing(paths []string, dirs bool) []string {
	var out []string
	for _, p := range paths {
		if st, err := os.Stat(filepath.Clean(p)); err == nil && st.IsDir() == dirs {
			out = append(out, p)
		}
	}
	return out
}
