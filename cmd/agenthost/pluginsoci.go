package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/host/ociplugin"
	"github.com/spf13/cobra"
)

func newPluginsPushCmd() *cobra.Command {
	var signKey string
	cmd := &cobra.Command{Use: "push FILE.wasm oci://REGISTRY/REPO:TAG", Short: "Push a plugin to an OCI registry, signed with --sign-key",
		Long: `push uploads a module as a one-layer artifact (media type
application/vnd.module.wasm.content.layer.v1+wasm) and prints its manifest digest. With
--sign-key (an ECDSA P-256 private key, PEM) it also pushes a cosign-style signature, which
a manifest entry's verify = { key = "cosign.pub" } checks. Plain HTTP only to loopback
registries.`,
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
			fmt.Fprintln(cmd.OutOrStdout(), d)
			return nil
		}}
	cmd.Flags().StringVar(&signKey, "sign-key", "", "sign with this ECDSA P-256 private key (PEM)")
	return cmd
}

func newPluginsPullCmd() *cobra.Command {
	var key, dir string
	cmd := &cobra.Command{Use: "pull oci://REGISTRY/REPO:TAG|@sha256:…", Short: "Pull a plugin from an OCI registry into the cache, verified with --key",
		Example: "  agenthost plugins pull oci://127.0.0.1:5000/plugins/calc:1.0 --key cosign.pub",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := ociplugin.Pull(args[0], dir, key)
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
