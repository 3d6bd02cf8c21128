// Package memory is agenthost's long-term memory: what an agent keeps between sessions
// (facts a user told it, a user's preferences, what an agent learned), searchable by text.
//
// It holds the types, the Store interface the session stores implement (store: SQLite
// with FTS5; store/postgres: tsvector), the one query sanitiser both use, and an
// in-process Store for tests and for hosts without a database. It also holds the arithmetic
// both stores search with: the vector index's k-means and probes (ivf.go; the stores keep
// it in SQL, store/vectorindex.go) and the rare-words-first word ranking (words.go).
//
// The rule every Store keeps: an entry belongs to a user, to an agent, or to both, and a
// search on behalf of a user sees that user's entries and the agent's shared ones, never
// another user's (Query.visible). The user of a search is the run's user as the host
// knows it (loop.CallInfo.User), never an argument a model or plugin chose.
//
// What it must not do: import the loop, the host or a store. It is a leaf: the stores
// import it, the host wires it to tools and a context strategy.
package memory
