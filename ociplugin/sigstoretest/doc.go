// Package sigstoretest makes keyless signatures for tests, offline: sigstore-go's virtual
// Sigstore (a Fulcio CA, a Rekor log and a timestamp authority, all in memory) signs, and
// its trusted root is written to a file as a verify policy names it. The bundles it makes
// are the JSON a real Sigstore client produces, so the code under test reads them as it
// would read cosign's.
//
// What it must not do: be imported by anything but tests, or reach a network.
package sigstoretest
