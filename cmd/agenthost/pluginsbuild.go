package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/jsbundle"
	"github.com/spf13/cobra"
)

// newPluginsBuildCmd is `plugins build FILE.ts`: the bundle the host would make at load,
// written to a file a manifest's js names and `plugins push` ships (docs/javascript.md,
// "Building a bundle").
func newPluginsBuildCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use: "build FILE.ts|FILE.js", Short: "Bundle a JavaScript or TypeScript tool into one .js file to ship", Args: cobra.ExactArgs(1),
		Long: `Bundle a JavaScript or TypeScript tool, with everything it imports but "agenthost",
into one CommonJS script with an inline source map: exactly what the host bundles when
it loads the source. The file opens with the line
  // agenthost bundle v1 "NAME.ts"
and a manifest's js may name it: the host then runs it as it is, without bundling it
again. Without -o, the bundle is written beside the source as NAME.bundle.js.`,
		Example: `  agenthost plugins build tools/weather.ts
  agenthost plugins build tools/weather.ts -o dist/weather.js && agenthost plugins push dist/weather.js REF`,
		RunE: func(cmd *cobra.Command, args []string) error {
			src := args[0]
			if !isJSPath(src) {
				return usage(fmt.Errorf("%s is not a JavaScript or TypeScript file (.js .mjs .cjs .ts .mts .cts .jsx .tsx)", src))
			}
			if out == "" {
				out = strings.TrimSuffix(src, filepath.Ext(src)) + ".bundle.js"
			}
			if same(src, out) {
				return usage(fmt.Errorf("-o %s is the source itself", out))
			}
			b, err := jsbundle.Build(src)
			if err != nil {
				return failed(err)
			}
			if err := writeFileAtomic(out, b.Code); err != nil {
				return failed(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d bytes, from %s)\n[[plugins]]\njs = %q\n", out, len(b.Code), b.File, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the bundle's path (default: NAME.bundle.js beside the source)")
	return cmd
}

// same tells whether a and b name one file (b may not exist yet).
func same(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	if err1 == nil && err2 == nil && aa == bb {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// writeFileAtomic writes data to path through a temporary file beside it, so a reader
// (a reloading host) never sees half a bundle.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
