//go:build unix

package loop

import (
	"errors"
	"syscall"
)

// pidAlive reports whether a process with this pid exists (signal 0 checks without
// sending anything; EPERM means it exists under another user). A zombie counts as
// alive until its parent reaps it.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
