package server

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The request guard keeps web pages the user happens to visit from driving the server.
// A server on loopback without a token is reachable by every page in the user's browser:
// a form or a no-cors fetch can POST to it (CSRF, which starts runs that call tools), and a
// page on a domain that re-resolves to 127.0.0.1 (DNS rebinding) reads its answers as
// same-origin. The guard runs before routing and before the token check, on every route:
//
//   - Host must name this server: a loopback name (localhost, 127.0.0.1, [::1], any
//     port), the address the connection arrived on, or a name in Options.AllowHosts.
//     A rebound page sends its own name, so it gets 403.
//   - An Origin header must be this server's own origin or one in Options.AllowOrigins;
//     others get 403. (Clients that are not browsers send no Origin and pass.) A request
//     without Origin that the browser marks as another site's subresource (Sec-Fetch-Site
//     cross-site or same-site, not a navigation: <script src>, <img>) gets 403 too.
//   - OPTIONS is a CORS preflight: answered with the Access-Control-Allow-* headers for
//     a listed origin only.
//   - POST must be Content-Type: application/json (415 otherwise), which a page can only
//     send cross-origin after a preflight, so no "simple" request reaches a handler.

// allowedMethods and allowedHeaders are what a preflight allows a listed origin.
const (
	allowedMethods = "GET, POST, OPTIONS"
	allowedHeaders = "Authorization, Content-Type, Accept"
)

// guard wraps next with the checks above.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			// Every body must arrive within the bound, read or not: net/http drains up to
			// 256 KiB of an unread body before it answers, and a client that stalls would
			// otherwise hold the connection (and never get its answer). readJSON lifts the
			// deadline once it has the whole body.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.BodyReadTimeout))
		}
		if !s.hostAllowed(r) {
			refuse(w, r, http.StatusForbidden, fmt.Sprintf(
				"host %q is not a name of this server: use localhost or 127.0.0.1, or start the server with --allow-host NAME", r.Host))
			return
		}
		origin := r.Header.Get("Origin")
		listed := origin != "" && slices.Contains(s.opts.AllowOrigins, origin)
		if origin != "" && !listed && !sameOrigin(origin, r) {
			refuse(w, r, http.StatusForbidden, fmt.Sprintf(
				"cross-origin request from %q refused: start the server with --allow-origin %s to allow it", origin, origin))
			return
		}
		if origin == "" && crossSiteSubresource(r) {
			refuse(w, r, http.StatusForbidden, fmt.Sprintf(
				"cross-site %s request refused (Sec-Fetch-Site: %s)", r.Header.Get("Sec-Fetch-Mode"), r.Header.Get("Sec-Fetch-Site")))
			return
		}
		if listed {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions {
			h := w.Header()
			h.Set("Allow", allowedMethods)
			if listed {
				h.Set("Access-Control-Allow-Methods", allowedMethods)
				h.Set("Access-Control-Allow-Headers", allowedHeaders)
				h.Set("Access-Control-Max-Age", "600")
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.Method == http.MethodPost {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				refuse(w, r, http.StatusUnsupportedMediaType, fmt.Sprintf(
					"POST needs Content-Type: application/json (got %q)", r.Header.Get("Content-Type")))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers an error without reading the request's body, and closes the
// connection when there is one, so that net/http does not wait to drain it first.
func refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	writeError(w, code, msg)
}

// crossSiteSubresource reports whether a browser says the request comes from another
// site's page without being a navigation: a <script src>, <img> or no-cors fetch, which
// carries no Origin. Following a link to the page (a navigation) stays allowed; the page
// sends nothing by itself.
func crossSiteSubresource(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return r.Header.Get("Sec-Fetch-Mode") != "navigate"
	}
	return false
}

// hostAllowed reports whether the Host header names this server.
func (s *Server) hostAllowed(r *http.Request) bool {
	host := hostName(r.Host)
	if host == "" {
		return false
	}
	if host == "localhost" || slices.ContainsFunc(s.opts.AllowHosts, func(h string) bool { return strings.EqualFold(hostName(h), host) }) {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	// The address the connection arrived on, e.g. 192.0.2.7 for --addr 0.0.0.0:8080
	// reached at http://192.0.2.7:8080/.
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ta, ok := la.(*net.TCPAddr); ok && ta.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// hostName is the lower-cased host of a Host header or --allow-host value, without port
// and brackets: "[::1]:8080" → "::1", "Example.COM" → "example.com".
func hostName(hostport string) string {
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// sameOrigin reports whether origin is the origin the request was addressed to
// (scheme, host and port of the Host header), as it is for the server's own page.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
}

// AddrHost returns the host name of a listen address ("myhost:8080" → ["myhost"]) for
// Options.AllowHosts, or nothing when it is an IP address or empty (those are checked
// against the connection's address already).
func AddrHost(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" || net.ParseIP(host) != nil {
		return nil
	}
	return []string{host}
}

// CheckOrigins refuses an allowed origin that is not scheme://host[:port], the form a
// browser's Origin header has (no path, no trailing slash, no wildcard).
func CheckOrigins(origins []string) error {
	for _, o := range origins {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.Path != "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
			return fmt.Errorf("allowed origin %q: want scheme://host[:port], e.g. http://localhost:5173", o)
		}
	}
	return nil
}
