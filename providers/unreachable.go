package providers

import (
	"errors"
	"fmt"
	"net"
	"net/url"
)

// Unreachable says that an adapter could not connect to its model server at all (the
// address refused the connection, its name does not resolve, nothing answers the
// dial), naming the address it tried and the setting that chooses it; nil when err is
// anything else. vendor prefixes the message ("openai"); baseURLVar is the environment
// variable that sets the address (OPENAI_BASE_URL). The error stays retryable: a
// server that is starting may answer the next attempt, and the loop reports the count.
func Unreachable(vendor, baseURLVar string, err error) *Error {
	var op *net.OpError
	var dns *net.DNSError
	isDial := errors.As(err, &op) && op.Op == "dial"
	if !isDial && !errors.As(err, &dns) {
		return nil
	}
	where := ""
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			where = u.Scheme + "://" + u.Host
		}
	}
	if where == "" && op != nil && op.Addr != nil {
		where = op.Addr.String()
	}
	cause := err.Error()
	switch {
	case dns != nil:
		cause = dns.Error()
	case op != nil && op.Err != nil:
		cause = op.Err.Error()
		var sys interface{ Unwrap() error }
		if errors.As(op.Err, &sys) && sys.Unwrap() != nil {
			cause = sys.Unwrap().Error() // "connection refused", not "connect: connection refused"
		}
	}
	return &Error{Kind: KindProvider, Retryable: true, Message: fmt.Sprintf(
		"%s: cannot connect to %s (%s): start the model server there, or set %s (or the provider's options.base_url) to where it listens",
		vendor, where, cause, baseURLVar)}
}
