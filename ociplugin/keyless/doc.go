// Package keyless verifies keyless signatures of oci:// plugins: Sigstore bundles (a
// Fulcio certificate for an OIDC identity, the signature, its transparency-log entry and
// timestamps) stored as OCI referrers of the artifact's manifest, the layout cosign 3
// writes. The registry's side is here: finding the referrers, reading the bundles (at
// most 32, of at most 1 MiB each), attaching one. The cryptography is
// github.com/sigstore/sigstore-go against a trusted root read from a file, in a program
// of its own, agenthost-sigstore (cmd/agenthost-sigstore), started beside the running
// executable for each check (helper.go): linked here, it cost every agenthost start ~2 ms
// of package init and the binary 5 MB.
//
// Importing it registers the verifier with ociplugin.RegisterKeyless, as a database/sql
// driver registers itself: cmd/agenthost imports it, and ociplugin (with manifest,
// which pulls through it) links none of it. AttachBundle stores a bundle beside an
// artifact (agenthost plugins push --bundle). VerifyBlob and VerifyImage apply the same
// checks to a release: a bundle signing a file (its SHA256SUMS), and the bundles
// referring to an image's manifest (agenthost verify).
//
// What it must not do: link sigstore-go (TestAgenthostLinksNoSigstoreClient), take the
// helper from PATH, fetch a trusted root (TUF) or contact Fulcio, Rekor or any other
// Sigstore service (the trusted root is a file, the log entry is in the bundle), or
// accept an attestation (another in-toto predicate) as a signature.
package keyless
