// Package storetest is the conformance suite of loop.SessionStore: one set of tests that
// the memory, SQLite and PostgreSQL stores all pass, so a run behaves the same on each.
// It also requires the extensions a served agent relies on: Leaser, SessionLister and
// SessionDeleter.
package storetest
