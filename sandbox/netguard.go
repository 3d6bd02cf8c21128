package sandbox

import (
	"context"
	"fmt"
	"net"
	"net/http/httptrace"
	"strings"
	"sync"

	"github.com/gobwas/glob"
)

// hostGlob is one allowed_hosts pattern. Patterns with a port match
// "host:port", others match the host alone.
type hostGlob struct {
	withPort bool
	g        glob.Glob
}

func compileHostGlob(pattern string) (hostGlob, error) {
	if pattern == "" {
		return hostGlob{}, fmt.Errorf("empty pattern")
	}
	g, err := glob.Compile(strings.ToLower(pattern), '.', ':')
	if err != nil {
		return hostGlob{}, err
	}
	_, port, splitErr := net.SplitHostPort(pattern)
	return hostGlob{withPort: splitErr == nil && port != "", g: g}, nil
}

type hostPolicy []hostGlob

func newHostPolicy(patterns []string) (hostPolicy, error) {
	var p hostPolicy
	for _, s := range patterns {
		g, err := compileHostGlob(s)
		if err != nil {
			return nil, err
		}
		p = append(p, g)
	}
	return p, nil
}

// allows reports whether a connection to hostPort ("host:port") is granted.
func (p hostPolicy) allows(hostPort string) bool {
	hostPort = strings.ToLower(hostPort)
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = hostPort
	}
	host = strings.Trim(host, "[]")
	for _, g := range p {
		if g.withPort && g.g.Match(hostPort) || !g.withPort && g.g.Match(host) {
			return true
		}
	}
	return false
}

// netGuard checks every connection a call's HTTP requests make.
//
// Extism's http_request host function checks allowed_hosts against the first
// URL only and then follows redirects with http.DefaultClient, so an allowed
// host could bounce the plugin to any other. The request carries the call's
// context, and the transport reports every connection it is about to make
// (the first one and each redirect's) to the httptrace.ClientTrace found
// there. When a connection is not granted the guard cancels the call before
// the dial and aborts the request: it never leaves, and the call ends with
// the reason.
//
// Because the call is cancelled, a plugin cannot catch the refusal and carry
// on; that is deliberate (deny loudly). Behind an HTTP proxy the connection
// is to the proxy, which is then what must be allowed: the check fails closed.
type netGuard struct {
	policy hostPolicy
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	denied error
}

func (g *netGuard) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{GetConn: g.check}
}

func (g *netGuard) check(hostPort string) {
	if g.policy.allows(hostPort) {
		return
	}
	err := fmt.Errorf("host %s not in allowed_hosts", hostPort)
	g.mu.Lock()
	if g.denied == nil {
		g.denied = err
	}
	g.mu.Unlock()
	g.cancel(err)
	// GetConn runs on the requesting goroutine before the transport looks
	// for a connection, so panicking here guarantees that not even a pooled
	// connection is used. The panic unwinds into the host function, which
	// wazero turns into a failed call.
	panic(err)
}

func (g *netGuard) deniedErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.denied
}
