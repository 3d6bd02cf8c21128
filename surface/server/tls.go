package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
)

// TLS: serve --tls-cert/--tls-key (and mcp serve --http) serve HTTPS, so that a bind
// beyond loopback carries its bearer token and its sessions encrypted. The pair is read
// and checked at start (a key that does not match its certificate, an unreadable or
// malformed file, is an error before anything listens); TLS 1.2 is the minimum.
// Without TLS a non-loopback bind still works with a token (a TLS-terminating proxy in
// front is a common setup), and the server says once, at start, that the token crosses
// the network in clear.

// TLSFiles names a certificate chain and its private key, PEM files.
type TLSFiles struct{ Cert, Key string }

// config loads the pair; nil, nil when neither is set.
func (f TLSFiles) config() (*tls.Config, error) {
	switch {
	case f.Cert == "" && f.Key == "":
		return nil, nil
	case f.Cert == "" || f.Key == "":
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s and key %s: %w", f.Cert, f.Key, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// CheckTLS reports what is wrong with f before serving (the CLI's usage error).
func CheckTLS(f TLSFiles) error {
	_, err := f.config()
	return err
}

// isLoopback reports whether addr's host is a loopback name or address.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
