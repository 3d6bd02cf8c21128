package providers

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
)

// stderrTail keeps the last bytes an adapter wrote to stderr, so that an adapter
// that dies before the handshake is reported with what it said, not with
// go-plugin's generic "plugin exited before we could connect".
type stderrTail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func newStderrTail(max int) *stderrTail { return &stderrTail{max: max} }

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// lines returns at most n of the last complete or partial lines, trimmed.
func (t *stderrTail) lines(n int) []string {
	t.mu.Lock()
	s := strings.TrimRight(string(t.buf), "\n")
	t.mu.Unlock()
	if s == "" {
		return nil
	}
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return ls
}

// Limits of what a start error quotes from the adapter's stderr.
const (
	stderrTailBytes = 4 << 10
	stderrTailLines = 20
	// exitWait bounds the wait for a failed adapter to be reaped, so that its exit
	// status and the rest of its stderr are known (go-plugin drains stderr first).
	exitWait = 2 * time.Second
)

// startFailure explains a failed start: the handshake error, the adapter's exit
// status when it exited, and the end of its stderr. path names the adapter as
// configured (a pinned adapter runs from a private copy).
func startFailure(err error, path string, cmd *exec.Cmd, proc *plugin.Client, tail *stderrTail, timeout time.Duration) error {
	if strings.Contains(err.Error(), "timeout while waiting for plugin to start") {
		// go-plugin killed it: its exit status would only say so.
		proc.Kill()
		return &startError{msg: fmt.Sprintf("adapter %s did not complete the handshake within %s%s", path, timeout, quoteTail(tail)), err: err}
	}
	deadline := time.Now().Add(exitWait)
	for !proc.Exited() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var b strings.Builder
	if proc.Exited() && cmd.ProcessState != nil {
		fmt.Fprintf(&b, "adapter %s %s", path, exitDescription(cmd.ProcessState.String()))
	} else {
		fmt.Fprintf(&b, "adapter %s did not complete the handshake", path)
	}
	b.WriteString(quoteTail(tail))
	return &startError{msg: b.String(), err: err}
}

func quoteTail(tail *stderrTail) string {
	if ls := tail.lines(stderrTailLines); len(ls) > 0 {
		return "; its stderr ended with:\n  " + strings.Join(ls, "\n  ")
	}
	return "; it wrote nothing to stderr"
}

// startError reports a failed start in the host's words; go-plugin's own error,
// several lines of generic advice, stays reachable through Unwrap and is quoted by
// its first line only.
type startError struct {
	msg string
	err error
}

func (e *startError) Error() string {
	first, _, _ := strings.Cut(e.err.Error(), "\n")
	return fmt.Sprintf("%s (%s)", e.msg, strings.TrimSpace(first))
}

func (e *startError) Unwrap() error { return e.err }

// exitDescription turns os.ProcessState's "exit status 3" into "exited with status 3".
func exitDescription(state string) string {
	if rest, ok := strings.CutPrefix(state, "exit status "); ok {
		return "exited with status " + rest
	}
	return "ended: " + state // "signal: killed"
}
