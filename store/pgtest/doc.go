// Package pgtest starts a real PostgreSQL server for tests: initdb in a temporary
// directory, postgres on a random loopback port, one database per test. Debian's
// postgresql-15 binaries are used (make deps installs them). initdb refuses to run as
// root, so as root the server runs as the unprivileged user "nobody".
package pgtest
