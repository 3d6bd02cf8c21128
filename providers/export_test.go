package providers

import "net"

// SetAfterVerify installs a hook run between the verification of a pinned adapter and
// its start, and returns the function that removes it.
func SetAfterVerify(f func(original string)) (restore func()) {
	afterVerify = f
	return func() { afterVerify = nil }
}

// SetMaxMessageSize lowers this process's side of the connection's message limit (the
// adapter keeps MaxMessageSize) and returns the function that restores it.
func SetMaxMessageSize(n int) (restore func()) {
	maxMessageSize = n
	return func() { maxMessageSize = MaxMessageSize }
}

// SocketOf is the running adapter's socket address, the directory made for it, and
// whether the connection uses TLS (tls.go).
func SocketOf(c *Client) (net.Addr, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc.ReattachConfig().Addr, c.sock.dir, c.tls
}

// SessionsOf says whether the running adapter serves Session (session.go) and how many
// of its streams are idle in the pool.
func SessionsOf(c *Client) (served bool, idle int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions, len(c.idle)
}

// FromTraceMetadata is what Serve's Stream does with the call's gRPC metadata, for a
// test adapter that serves Stream without Serve.
var FromTraceMetadata = fromTraceMetadata
