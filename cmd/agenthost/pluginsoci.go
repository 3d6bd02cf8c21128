package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/ociplugin"
	"github.com/agenthost/agenthost/ociplugin/keyless"
)

func newPluginsPushCmd() *cobra.Command {
	var signKey, bundleFile string
	cmd := &cobra.Command{Use: "push FILE.wasm|BUNDLE.js oci://REGISTRY/REPO:TAG", Short: "Push a plugin to an OCI registry, signed with --sign-key or a Sigstore --bundle",
		Long: `push uploads a module as a one-layer artifact (media type
application/vnd.module.wasm.content.layer.v1+wasm), or a JavaScript bundle that
"plugins build" wrote (application/vnd.agenthost.js.bundle.v1+javascript, for a
manifest's js = "oci://…"), and prints its manifest digest. With
--sign-key (an ECDSA P-256 private key, PEM) it also pushes a cosign-style signature, which
a manifest entry's verify = { key = "cosign.pub" } checks. With --bundle (a Sigstore
bundle, JSON, signing the artifact's manifest: what cosign sign or cosign sign-blob of the
manifest writes for a keyless signer) it attaches the bundle as a referrer of the
artifact, which verify = { identity, issuer, trusted_root } checks. Push once to learn
the manifest digest, sign it, then push the same file again with --bundle. Plain
HTTP only to loopback registries.`,
		Example: "  agenthost plugins push calc.wasm oci://127.0.0.1:5000/plugins/calc:1.0 --sign-key cosign.key",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := os.ReadFile(args[0])
			if err != nil {
				return failed(err)
			}
			d, err := ociplugin.Push(b, args[1], signKey)
			if err != nil {
				return failed(err)
			}
			if bundleFile != "" {
				if err := attachBundle(args[1], d, bundleFile); err != nil {
					return failed(err)
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), d)
			return nil
		}}
	cmd.Flags().StringVar(&signKey, "sign-key", "", "sign with this ECDSA P-256 private key (PEM)")
	cmd.Flags().StringVar(&bundleFile, "bundle", "", "attach this Sigstore bundle (JSON) signing the artifact's manifest")
	return cmd
}

// attachBundle attaches the bundle in file to the artifact pushed at ref with manifest
// digest d (by digest: the tag may have moved since).
func attachBundle(ref, d, file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	r, err := ociplugin.ParseRef(ref)
	if err != nil {
		return err
	}
	_, err = keyless.AttachBundle(ociplugin.Scheme+r.Context().Digest(d).String(), raw)
	return err
}

func newPluginsPullCmd() *cobra.Command {
	var key, dir string
	cmd := &cobra.Command{Use: "pull oci://REGISTRY/REPO:TAG|@sha256:…", Short: "Pull a plugin from an OCI registry into the cache, verified with --key",
		Long: `pull fetches an artifact as a manifest's oci:// entry does, checks it (and its signature
with --key), caches the module and prints its path, its sha256 and the artifact's manifest
digest. It does not write agent.lock. With --locked the reference must be in the lock of
the manifest given by -c (agent.lock beside agent.toml) with the digests it resolves to:
otherwise it is refused before the module is fetched, naming both digests.`,
		Example: `  agenthost plugins pull oci://127.0.0.1:5000/plugins/calc:1.0 --key cosign.pub
  agenthost --locked plugins pull oci://127.0.0.1:5000/plugins/calc:1.0   # is the registry still serving what agent.lock records?`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := ociplugin.PullOptions{Cache: dir, Key: key}
			if lockMode(cmd) == manifest.LockStrict {
				lock, err := ociplugin.ReadLock(ociplugin.LockPath(manifestPath(cmd)))
				if err != nil {
					return usage(err)
				}
				opts.Check = lock.Check
			}
			p, err := ociplugin.PullWith(args[0], opts)
			if err != nil {
				return failed(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\nsha256 = %q\nmanifest %s\n", p.Path, p.ModuleDigest, p.ManifestDigest)
			return nil
		}}
	cmd.Flags().StringVar(&key, "key", "", "refuse the artifact unless its signature verifies with this public key (PEM)")
	cmd.Flags().StringVar(&dir, "dir", filepath.Join(".agenthost", "oci"), "the cache directory")
	return cmd
}
