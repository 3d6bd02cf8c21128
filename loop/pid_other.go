//go:build !unix

package loop

// pidAlive cannot probe a pid here without more machinery: every pid counts as alive, so
// only an expired heartbeat (LeaseTTL) makes a lease dead.
func pidAlive(pid int) bool { return pid > 0 }
