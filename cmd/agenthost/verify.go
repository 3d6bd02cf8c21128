package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/ociplugin"
	"github.com/agenthost/agenthost/ociplugin/keyless"
)

func newVerifyCmd() *cobra.Command {
	var k ociplugin.Keyless
	var tlog bool
	var bundleFile string
	cmd := &cobra.Command{
		Use:   "verify SHA256SUMS [ARCHIVE...] | oci://REGISTRY/REPO:TAG",
		Short: "Verify a release's keyless signature: its SHA256SUMS and archives, or its image",
		Long: `verify checks a keyless (Sigstore) signature as a plugin's verify = { identity,
issuer, trusted_root } does: the signer's certificate must chain to a Fulcio CA of
--trusted-root (a trusted_root.json file; nothing is fetched) and name --identity (or
match --identity-regexp) and --issuer, and its transparency-log entry must verify
(--tlog=false accepts a timestamp authority's timestamp instead).

With a file (a release's SHA256SUMS), --bundle is the Sigstore bundle that signs it (what
cosign sign-blob --bundle wrote, SHA256SUMS.sigstore.json in a release); each ARCHIVE
named after it must then have the sha256 that SHA256SUMS lists for its name. With an
oci:// reference (the image), the bundles stored as referrers of its manifest (what
cosign sign writes) are checked, and the verified manifest digest is printed: pull by it.`,
		Example: `  agenthost verify SHA256SUMS agenthost_v1.0.0_linux_amd64.tar.gz --bundle SHA256SUMS.sigstore.json --trusted-root trusted_root.json --identity-regexp 'https://github.com/ORG/REPO/.*' --issuer https://token.actions.githubusercontent.com
  agenthost verify oci://registry.example.com/agenthost:v1.0.0 --trusted-root trusted_root.json --identity release@example.com --issuer https://accounts.example.com`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k.NoTlog = !tlog
			if err := k.Validate(); err != nil {
				return usage(err)
			}
			if strings.HasPrefix(args[0], ociplugin.Scheme) {
				if len(args) > 1 || bundleFile != "" {
					return usage(errors.New("an image's bundles are read from its registry: no --bundle, no archives"))
				}
				d, err := keyless.VerifyImage(k, args[0])
				if err != nil {
					return failed(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: signed by %s (issuer %s): %s\n", args[0], k.Describe(), k.Issuer, d)
				return nil
			}
			if bundleFile == "" {
				return usage(errors.New("verify FILE needs --bundle: the Sigstore bundle that signs it"))
			}
			return verifyRelease(cmd.OutOrStdout(), k, bundleFile, args[0], args[1:])
		}}
	cmd.Flags().StringVar(&bundleFile, "bundle", "", "the Sigstore bundle (JSON) signing FILE")
	cmd.Flags().StringVar(&k.TrustedRoot, "trusted-root", "", "Sigstore's trusted_root.json (the Fulcio CAs, logs and timestamp authorities to trust)")
	cmd.Flags().StringVar(&k.Identity, "identity", "", "the signer's certificate identity, exactly (an e-mail, a URI)")
	cmd.Flags().StringVar(&k.IdentityRegexp, "identity-regexp", "", "or a regular expression the whole identity matches")
	cmd.Flags().StringVar(&k.Issuer, "issuer", "", "the OIDC issuer the signer's certificate names")
	cmd.Flags().BoolVar(&tlog, "tlog", true, "require a transparency-log entry (false: a signed timestamp instead)")
	return cmd
}

// maxSums bounds a checksums file and its bundle: a release's are a few hundred bytes.
const maxSums = 1 << 20

// verifyRelease verifies the bundle's signature of the checksums file sums, then that each
// archive's sha256 is the one sums lists for its base name.
func verifyRelease(w io.Writer, k ociplugin.Keyless, bundleFile, sums string, archives []string) error {
	blob, err := readSmall(sums)
	if err != nil {
		return failed(err)
	}
	b, err := readSmall(bundleFile)
	if err != nil {
		return failed(err)
	}
	if err := keyless.VerifyBlob(k, blob, b); err != nil {
		return failed(fmt.Errorf("%s: %w", sums, err))
	}
	fmt.Fprintf(w, "%s: signed by %s (issuer %s)\n", sums, k.Describe(), k.Issuer)
	listed, err := parseSums(blob)
	if err != nil {
		return failed(fmt.Errorf("%s: %w", sums, err))
	}
	for _, a := range archives {
		want, ok := listed[filepath.Base(a)]
		if !ok {
			return failed(fmt.Errorf("%s: %s does not list it", a, sums))
		}
		got, err := fileSHA256(a)
		if err != nil {
			return failed(err)
		}
		if got != want {
			return failed(fmt.Errorf("%s: sha256 %s, but the signed %s lists %s: the file is not the one released", a, got, sums, want))
		}
		fmt.Fprintf(w, "%s: sha256 %s, as %s lists\n", a, got, sums)
	}
	return nil
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSums+1))
	if err == nil && len(b) > maxSums {
		err = fmt.Errorf("%s: larger than %d bytes", path, maxSums)
	}
	return b, err
}

// parseSums reads sha256sum's output: "HEX  NAME" (or "HEX *NAME") per line.
func parseSums(b []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		sum, name, ok := strings.Cut(sc.Text(), " ")
		name = strings.TrimPrefix(strings.TrimPrefix(name, " "), "*")
		if _, err := hex.DecodeString(sum); !ok || err != nil || len(sum) != 64 || name == "" {
			return nil, fmt.Errorf("line %d is not a sha256sum line (HEX  NAME)", n)
		}
		out[name] = sum
	}
	return out, sc.Err()
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
