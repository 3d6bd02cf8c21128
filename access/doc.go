// Package access is who may do what in agenthost's API: users with roles, the owner of a
// session and the users it is shared with, and the one rule (Allowed) that decides from
// them whether a caller may read, continue, approve in, share or delete a session.
//
// Every surface that acts on a session asks Allowed (surface/server does, for HTTP and the
// console; the CLI acts as the operating-system user who owns the store, an admin). The
// rule is a pure function, so it is tested by itself and cannot be bypassed by a route
// that forgets a check: the server's session routes all go through one helper that calls
// it (surface/server/access.go).
//
// It holds the types, the rule, token minting and hashing, and the Store interface the
// session stores implement (store: SQLite; store/postgres; InMemory here). What it must
// not do: import the loop, the host, the server or a store, or know about HTTP.
package access
