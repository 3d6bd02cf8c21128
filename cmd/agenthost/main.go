// Command agenthost runs agents declared in an agent.toml: `agenthost run PROMPT`.
// This package holds flags and presentation only; everything else is in host.
package main

import (
	_ "github.com/agenthost/agenthost/internal/startheap" // first: its init must precede the others (startheap's doc)

	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"time"

	"github.com/agenthost/agenthost/confine"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	_ "github.com/agenthost/agenthost/ociplugin/keyless" // verify = { identity, issuer, trusted_root } (ociplugin.RegisterKeyless)
	"github.com/agenthost/agenthost/providers"
	_ "github.com/agenthost/agenthost/store/postgres" // [store] kind = "postgres" (store.Driver)
	"github.com/spf13/cobra"
)

// version may be set at build time with -ldflags "-X main.version=..."; otherwise it
// comes from the module's build information (versionString).
var version = ""

// commit may be set at build time with -ldflags "-X main.commit=..." (scripts/release.sh,
// which builds without a VCS stamp so that its archives are reproducible); otherwise it
// comes from the build's VCS stamp.
var commit = ""

// Exit codes (README.md, "Exit status").
const (
	exitOK          = 0
	exitFailed      = 1 // failed or incomplete run; a tool call that returned isError
	exitUsage       = 2 // bad flags or manifest
	exitInterrupted = 130
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	if len(os.Args) > 1 && os.Args[1] == confine.Subcommand {
		err := confine.Main(os.Args[2:]) // returns only when it could not exec the command
		fmt.Fprintln(os.Stderr, "agenthost:", err)
		os.Exit(126)
	}
	if exe, err := os.Executable(); err == nil {
		host.SelfExe = exe
	}
	defer providers.CleanupClients()
	root := newRoot()
	stderr := newSafeWriter(os.Stderr) // an error may carry a plugin's or model's text (terminal.go)
	err := leaseTTLFromEnv()
	if err == nil {
		err = root.Execute()
	}
	code := exitOK
	var ee *exitError
	var me *manifest.Error
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.code
		if ee.err != nil {
			fmt.Fprintln(stderr, "agenthost:", ee.err)
		}
	case errors.As(err, &me):
		code = exitUsage
		fmt.Fprintln(stderr, "agenthost:", err)
	default:
		code = exitUsage // cobra's own errors are usage errors
		fmt.Fprintln(stderr, "agenthost:", err)
	}
	if hint := missingManifestHint(root, err); hint != "" {
		fmt.Fprintln(stderr, "agenthost:", hint)
	}
	providers.CleanupClients()
	os.Exit(code)
}

// leaseTTLFromEnv applies AGENTHOST_LEASE_TTL (a Go duration), how long a silent
// process keeps its sessions' leases (loop.LeaseTTL, 30s). Tests that stop a process
// past its lease shorten it; every process sharing a store must use the same value.
func leaseTTLFromEnv() error {
	v := os.Getenv("AGENTHOST_LEASE_TTL")
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return usage(fmt.Errorf("AGENTHOST_LEASE_TTL=%q: want a positive duration such as 30s", v))
	}
	loop.SetLeaseTTL(d)
	return nil
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "agenthost",
		Short: "Run LLM agents whose tools and hooks are sandboxed WebAssembly plugins",
		Example: `  agenthost init                               # a commented starter agent.toml
  agenthost run --provider scripted "hello"    # offline, no API key
  agenthost plugins list
  agenthost -c ~/agents/helper.toml serve
  agenthost --locked serve                     # refuse oci:// plugins that agent.lock does not pin`,
		// --version prints what "agenthost version" prints.
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringP("config", "c", "agent.toml", "the agent manifest")
	root.PersistentFlags().Bool("locked", false, "refuse an oci:// plugin that the manifest's agent.lock does not record with the digests it resolves to; never write the lock")
	root.SetVersionTemplate("agenthost {{.Version}}\n")
	// Every command prints through these: text it did not write is neutralised (terminal.go).
	root.SetOut(newSafeWriter(os.Stdout))
	root.SetErr(newSafeWriter(os.Stderr))
	root.AddCommand(newRunCmd(), newServeCmd(), newWorkerCmd(), newPluginsCmd(), newSessionsCmd(), newInitCmd(), newVersionCmd(), newMCPCmd(), newInsightsCmd(), newMemoryCmd(), newEvalCmd(), newAuditCmd(), newApprovalsCmd(), newWorkflowCmd(), newSchedulesCmd(), newUsersCmd(), newStoreCmd(), newSecretsCmd(), newVerifyCmd())
	registerCompletions(root)
	return root
}

// missingManifestHint is the next step when err is the manifest not being there: the
// first thing a newcomer runs in an empty directory fails that way.
func missingManifestHint(root *cobra.Command, err error) string {
	var pe *fs.PathError
	if err == nil || !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	f := root.PersistentFlags().Lookup("config")
	if pe.Path != f.Value.String() {
		return ""
	}
	if pe.Path == f.DefValue {
		return "no agent.toml here: \"agenthost init\" writes a starter one (or -c names another manifest)"
	}
	return fmt.Sprintf("%s does not exist: \"agenthost -c %s init\" writes a starter manifest there", pe.Path, pe.Path)
}

func manifestPath(cmd *cobra.Command) string {
	p, _ := cmd.Flags().GetString("config")
	return p
}

// lockMode is what loading the manifest does with its agent.lock: record what its
// oci:// plugins resolved to, or, with --locked, refuse what the lock does not hold.
func lockMode(cmd *cobra.Command) manifest.LockMode {
	if on, _ := cmd.Flags().GetBool("locked"); on {
		return manifest.LockStrict
	}
	return manifest.LockUpdate
}

// failed wraps an error with exit code 1; usage wraps one with exit code 2.
func failed(err error) error { return &exitError{code: exitFailed, err: err} }
func usage(err error) error  { return &exitError{code: exitUsage, err: err} }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Example: `  agenthost version
  agenthost --version`,
		Args: cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "agenthost %s\n", versionString())
		},
	}
}

// versionString is the module version (a tag with `go install …@v1.2.3`, "(devel)" in a
// checkout), then the commit it was built from, when the build recorded it.
func versionString() string {
	v := version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v + " (no build information)"
	}
	if v == "" {
		v = bi.Main.Version
	}
	rev, modified := commit, ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev != "" {
		v += fmt.Sprintf(" (commit %.12s%s)", rev, modified)
	}
	return v + " " + bi.GoVersion
}
