package confine

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Kernel is what this kernel can enforce: its Landlock ABI version (0: none) and whether
// it takes a seccomp filter (the socket filter of net = false, seccomp.go).
//
// What each Landlock ABI adds, as this package uses it:
//
//	1  paths (read, write, execute) and ptrace: no ptrace of a process outside the domain
//	4  TCP bind and connect (net = false: none)
//	6  scopes: no signal to, and no abstract Unix socket of, a process outside the domain
//	9  connect(2) to a pathname Unix socket outside the write list
//	10 UDP bind and send (net = false: none)
type Kernel struct {
	Landlock int
	Seccomp  bool
}

// ABIEnv, set in the host's environment to a number, makes the host confine as if the
// kernel's Landlock ABI were at most that (never more than it is): to see and test what a
// command gets on an older kernel.
const ABIEnv = "AGENTHOST_LANDLOCK_ABI"

// Detect is this kernel's Kernel, the Landlock ABI capped by ABIEnv.
func Detect() Kernel {
	return Kernel{Landlock: capABI(landlockABI(), os.Getenv(ABIEnv)), Seccomp: seccompAvailable()}
}

func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// capABI is v, or the cap s when it is a smaller non-negative number.
func capABI(v int, s string) int {
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= 0 && n < v {
		return n
	}
	return v
}

// Available reports the kernel's Landlock ABI version (as Detect sees it), 0 when it has none.
func Available() int { return Detect().Landlock }

// NoNet reports whether spec forbids the network.
func (s Spec) NoNet() bool { return s.Net != nil && !*s.Net }

// Missing lists what spec asks that k cannot enforce; empty: the confinement is whole.
// With net = false, seccomp closes every socket family but Unix stream sockets and
// every connect(2); Landlock's TCP and UDP rules are a second wall where the kernel has
// them. Without seccomp, Landlock alone closes TCP (ABI 4) and UDP (ABI 10) but never
// the Unix sockets of other processes below ABI 9.
func (k Kernel) Missing(spec Spec) []string {
	var out []string
	if k.Landlock < 1 {
		return append([]string{"paths and ptrace (this kernel has no Landlock)"}, k.missingNet(spec)...)
	}
	if k.Landlock < 6 {
		out = append(out, fmt.Sprintf("signals and abstract Unix sockets (Landlock ABI %d < 6)", k.Landlock))
	}
	return append(out, k.missingNet(spec)...)
}

func (k Kernel) missingNet(spec Spec) []string {
	if !spec.NoNet() || k.Seccomp {
		return nil
	}
	var out []string
	if k.Landlock < 4 {
		out = append(out, "TCP")
	}
	if k.Landlock < 10 {
		out = append(out, "UDP")
	}
	if k.Landlock < 9 {
		out = append(out, "Unix sockets")
	}
	if len(out) == 0 {
		return nil
	}
	return []string{"net = false: " + strings.Join(out, ", ") + " stay open (no seccomp)"}
}

// String says what k enforces, for the host to report at start.
func (k Kernel) String() string {
	var parts []string
	switch {
	case k.Landlock == 0:
		parts = append(parts, "no Landlock: paths, ptrace and signals unconfined")
	default:
		have := []string{"paths", "ptrace"}
		if k.Landlock >= 4 {
			have = append(have, "TCP")
		}
		if k.Landlock >= 6 {
			have = append(have, "signals", "abstract Unix sockets")
		}
		if k.Landlock >= 9 {
			have = append(have, "Unix socket paths")
		}
		if k.Landlock >= 10 {
			have = append(have, "UDP")
		}
		parts = append(parts, fmt.Sprintf("Landlock ABI %d (%s)", k.Landlock, strings.Join(have, ", ")))
	}
	if k.Seccomp {
		parts = append(parts, "seccomp (net = false: no socket but Unix stream, no connect)")
	} else {
		parts = append(parts, "no seccomp")
	}
	return strings.Join(parts, "; ")
}
