package confine

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
)

// Spec is a command's confinement: sandbox = { read = [...], write = [...], net = false }.
type Spec struct {
	Read  []string `toml:"read" json:"read,omitempty"`
	Write []string `toml:"write" json:"write,omitempty"`
	// Net false forbids every socket that leaves the process (NoNet); nil or true leaves
	// the network.
	Net *bool `toml:"net" json:"net,omitempty"`
	// Required refuses to start the command when this kernel cannot enforce all of Spec
	// (Kernel.Missing); the manifest's confine = "required". Otherwise the command runs
	// with what the kernel enforces, and the host says what is missing.
	Required bool `toml:"-" json:"required,omitempty"`
}

// Subcommand is the hidden command the re-executed host runs.
const Subcommand = "__confine"

// systemDirs are readable (and executable) by every confined command: where programs,
// their interpreters and shared libraries live, and the few files of /etc that name
// resolution, TLS and user lookup read. The rest of /etc is not among them.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ssl", "/etc/ca-certificates",
	"/etc/pki", "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf",
	"/etc/host.conf", "/etc/localtime", "/etc/services", "/etc/protocols", "/etc/passwd", "/etc/group"}

// devices every command may use.
var devices = []string{"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/tty"}

// ErrPartial is wrapped by Wrap and Main when spec.Required and the kernel cannot
// enforce all of spec.
var ErrPartial = errors.New("confinement would be partial")

// Wrap rewrites cmd to run under spec through exe (the agenthost binary), which must
// handle Subcommand with Main. Paths in spec must be absolute. With spec.Required, a
// kernel that cannot enforce all of spec is an error wrapping ErrPartial.
func Wrap(cmd *exec.Cmd, exe string, spec Spec) error {
	k := Detect()
	if err := k.check(spec); err != nil {
		return err
	}
	if exe == "" {
		return errors.New("confinement needs the agenthost binary to start the command")
	}
	path := cmd.Path
	if lp, err := exec.LookPath(path); err == nil {
		path = lp
	}
	// -abi: the Kernel decided here, so Main (whose environment is the command's, not
	// the host's) confines exactly as the host reported.
	args := []string{exe, Subcommand, "-abi", strconv.Itoa(k.Landlock)}
	for _, p := range spec.Read {
		args = append(args, "-read", p)
	}
	for _, p := range spec.Write {
		args = append(args, "-write", p)
	}
	if spec.NoNet() {
		args = append(args, "-no-net")
	}
	if spec.Required {
		args = append(args, "-required")
	}
	args = append(args, "--", path)
	args = append(args, cmd.Args[1:]...)
	cmd.Path, cmd.Args, cmd.Err = exe, args, nil
	return nil
}

// check is ErrPartial when spec is Required and k cannot enforce all of it.
func (k Kernel) check(spec Spec) error {
	if missing := k.Missing(spec); spec.Required && len(missing) > 0 {
		return fmt.Errorf("%w (confine = \"required\"): this kernel does not enforce %s", ErrPartial, strings.Join(missing, "; "))
	}
	return nil
}

type list []string

func (l *list) String() string     { return fmt.Sprint(*l) }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

// Main is the Subcommand: it confines this process as args say and execs the command.
// It returns only on error.
func Main(args []string) error {
	fs := flag.NewFlagSet(Subcommand, flag.ContinueOnError)
	var spec Spec
	fs.Var((*list)(&spec.Read), "read", "a path the command may read")
	fs.Var((*list)(&spec.Write), "write", "a path the command may read and write")
	noNet := fs.Bool("no-net", false, "no socket leaves the process")
	fs.BoolVar(&spec.Required, "required", false, "refuse partial confinement")
	abi := fs.Int("abi", -1, "the Landlock ABI to use at most")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmd := fs.Args()
	if len(cmd) == 0 {
		return errors.New("confine: no command")
	}
	if *noNet {
		spec.Net = new(bool)
	}
	k := Detect()
	k.Landlock = capABI(k.Landlock, strconv.Itoa(*abi))
	if err := k.check(spec); err != nil {
		return fmt.Errorf("confine %s: %w", cmd[0], err)
	}
	if err := restrict(k, spec, cmd[0]); err != nil {
		return fmt.Errorf("confine %s: %w", cmd[0], err)
	}
	if spec.NoNet() && k.Seccomp {
		if err := installNoNet(); err != nil {
			return fmt.Errorf("confine %s: %w", cmd[0], err)
		}
	}
	return syscall.Exec(cmd[0], cmd, os.Environ())
}

// abiConfigs are go-landlock's presets by ABI version.
var abiConfigs = []landlock.Config{{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// restrict applies Landlock at k's ABI, in one ruleset: paths (and with them ptrace),
// the network when spec has none (TCP, and UDP from ABI 10), the scopes (signals and
// abstract Unix sockets, from ABI 6).
func restrict(k Kernel, spec Spec, command string) error {
	if k.Landlock == 0 {
		return nil
	}
	cfg := abiConfigs[min(k.Landlock, len(abiConfigs)-1)]
	if !spec.NoNet() {
		cfg.HandledAccessNet = 0 // no net rule is handled: the network stays
	}
	rules := []landlock.Rule{landlock.RODirs(existing(systemDirs, true)...).IgnoreIfMissing(),
		landlock.ROFiles(existing(systemDirs, false)...).IgnoreIfMissing(),
		landlock.RWFiles(devices...).IgnoreIfMissing(), landlock.ROFiles(command)}
	rules = append(rules, pathRules(spec.Read, false, k.Landlock)...)
	rules = append(rules, pathRules(spec.Write, true, k.Landlock)...)
	return cfg.Restrict(rules...)
}

// pathRules grants each path (a directory: everything under it; a file: itself). A
// write path may also hold Unix sockets the command connects to (ABI 9).
func pathRules(paths []string, rw bool, abi int) []landlock.Rule {
	var out []landlock.Rule
	for _, p := range paths {
		st, err := os.Stat(p)
		dir := err == nil && st.IsDir()
		var r landlock.FSRule
		switch {
		case dir && rw:
			r = landlock.RWDirs(p)
		case dir:
			r = landlock.RODirs(p)
		case rw:
			r = landlock.RWFiles(p).IgnoreIfMissing()
		default:
			r = landlock.ROFiles(p).IgnoreIfMissing()
		}
		if rw && abi >= 9 {
			r = r.WithResolveUnix()
		}
		out = append(out, r)
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
