package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Step-up (the MCP authorization spec's step-up authorization flow): a server may want
// more scope for one operation than for another, and answers a request whose token
// lacks it with 403 and `WWW-Authenticate: Bearer error="insufficient_scope",
// scope="..."`. The client then signs in again asking for the scopes it was granted and
// those the challenge names together, and sends the request once more with the new
// token. Bounded: one step-up per request (its second 403 is the answer), one at a time
// (a request that got its 403 with a token older than the last step-up is sent again
// with the new one, without signing in again), and never beyond OAuth.ScopeLimit when
// the manifest sets one.

// stepUp signs in for the scope r's 403 challenge asks, then sends r again.
func (t *oauthTransport) stepUp(r *http.Request, resp *http.Response, gen int) (*http.Response, error) {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil || !insufficientScope(cs) || (r.Body != nil && r.Body != http.NoBody && r.GetBody == nil) {
		return resp, nil
	}
	t.stepMu.Lock()
	defer t.stepMu.Unlock()
	t.mu.Lock()
	src, now, granted := t.src, t.gen, t.scopes
	t.mu.Unlock()
	if now == gen {
		want, err := t.wanted(granted, challengedScopes(cs))
		if err != nil {
			drain(resp)
			return nil, err
		}
		if src, err = t.o.StepUp(r.Context(), r, resp, want); err != nil {
			drain(resp)
			return nil, fmt.Errorf("sign in again for scope %q: %w", strings.Join(want, " "), err)
		}
		t.mu.Lock()
		t.src, t.gen, t.scopes = src, t.gen+1, want
		t.mu.Unlock()
	}
	drain(resp)
	again := r.Clone(r.Context())
	if r.GetBody != nil {
		if again.Body, err = r.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.send(again, src)
}

// wanted is the scopes a step-up asks for: those granted and those challenged, none
// outside the limit.
func (t *oauthTransport) wanted(granted, challenged []string) ([]string, error) {
	if len(challenged) == 0 {
		return nil, errors.New("the server answered 403 insufficient_scope without naming a scope")
	}
	want := slices.Clone(granted)
	for _, s := range challenged {
		if !slices.Contains(want, s) {
			want = append(want, s)
		}
	}
	if lim := t.o.ScopeLimit; len(lim) > 0 {
		for _, s := range want {
			if !slices.Contains(lim, s) {
				return nil, fmt.Errorf("the server asks for scope %q, which the entry's oauth scopes (%s) do not include", s, strings.Join(lim, " "))
			}
		}
	}
	return want, nil
}

func insufficientScope(cs []oauthex.Challenge) bool {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["error"] == "insufficient_scope" {
			return true
		}
	}
	return false
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
}

// StepUp signs in again by discovery for c.Scopes, from a server's 403
// insufficient_scope answer resp to req (the request the step-up is for): the
// authorization server is found from that answer as at the first sign-in, and the
// grant returned.
func StepUp(ctx context.Context, c DiscoverConfig, req *http.Request, resp *http.Response) (*Grant, error) {
	var grant *Grant
	h, err := newSignIn(c, &http.Client{Timeout: 30 * time.Second}, func(oc *oauth2.Config, tok *oauth2.Token) {
		grant = newGrant(oc, tok)
	})
	if err != nil {
		return nil, err
	}
	if err := h.Authorize(ctx, req, resp); err != nil {
		return nil, err
	}
	if grant == nil {
		return nil, errors.New("the server's answer led to no sign-in")
	}
	return grant, nil
}
