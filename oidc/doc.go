// Package oidc authenticates API callers by a JWT from an identity provider (OpenID
// Connect ID tokens or any JWT with the same claims): the signature against the
// provider's keys (a JWKS file, or a JWKS URL fetched and cached within time, size and
// rate limits: jwks.go), the issuer, the
// audience and the expiry, through github.com/coreos/go-oidc. The caller's name comes
// from a claim (sub by default) and their role from another, or a default.
//
// What it must not do: decide what a caller may do (package access does), trust a token's
// header to choose its algorithm or key beyond the configured set (go-oidc refuses "none"
// and keys not in the set), fetch anything but the configured JWKS URL (redirects are
// not followed), let a fetch hold up a token its held keys can verify, or put any byte of
// the provider's answers into an error (errors reach the client's 401).
package oidc
