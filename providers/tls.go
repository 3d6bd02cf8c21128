package providers

import (
	"os"
	"syscall"
)

// The connection to an adapter is a Unix socket in a directory made for it (os.MkdirTemp:
// mode 0700, owned by this user). go-plugin's AutoMTLS (a certificate pair generated per
// process, a TLS handshake, every frame encrypted) protects that connection from other
// users of the machine; a directory only this user can enter does the same, since no one
// else can reach the socket, and this user (or root) could read the adapter's memory
// anyway. So TLS is dropped exactly when the directory is private: a directory, owned by
// this user, with no permission bit for group or others. Anything else — a directory
// someone else owns or may enter, or one that cannot be checked — keeps AutoMTLS.
// Measured: the TLS handshake and framing were about a third of a provider step (#36).
func needTLS(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) != os.Getuid()
}
