package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agenthost/agenthost/redact"
)

// check validates what the decoder cannot: references, files, digests, names. The
// tables are checked in this order, and the first problem is the error.
func (m *Manifest) check() error {
	if m.Agent.Name == "" {
		m.Agent.Name = "agent"
	}
	for _, step := range []func() error{
		m.checkMemory, m.checkA2A, m.checkAuth, m.checkRedact, m.checkAdmission, m.checkAttachments, m.checkApprovals,
		func() error { return m.checkProviderChain("agent", &m.Agent) },
		m.checkProviders, m.checkTelemetry, m.checkStore, m.checkNumbers, m.checkAgents, m.checkRetry,
		m.checkPluginsAndServers, m.checkCaches, m.checkTools, m.checkToolGroups, m.checkRuntimes, m.loadWorkflowFiles, m.checkWorkflows, m.checkSchedules,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// checkAuth checks [auth.oidc] (oidc), at the key its error names, and resolves its
// jwks_file inside the manifest's directory (paths.go).
func (m *Manifest) checkAuth() error {
	if c := m.Auth.OIDC; c != nil {
		if err := c.Check(); err != nil {
			key, msg, _ := strings.Cut(err.Error(), ": ")
			return m.ErrorAt("auth.oidc."+key, "%s", msg)
		}
		f, err := m.inside("auth.oidc.jwks_file", c.JWKSFile)
		if err != nil {
			return err
		}
		c.JWKSFile = f
	}
	return nil
}

// checkRedact checks [redact] by building the guardrail it describes (redact).
func (m *Manifest) checkRedact() error {
	if m.Redact != nil {
		if _, err := redact.New(*m.Redact); err != nil {
			key, msg, _ := strings.Cut(err.Error(), ": ")
			return m.ErrorAt(key, "%s", msg)
		}
	}
	return nil
}

// checkProviders checks the [providers.NAME] tables and resolves their commands,
// options, sandboxes and pins.
func (m *Manifest) checkProviders() error {
	for _, name := range m.ProviderNames() {
		p := m.Providers[name]
		key := "providers." + name
		if p.Command == "" {
			return m.ErrorAt(key, "no command")
		}
		p.Command = m.resolveCommand(p.Command)
		for k, v := range p.Options {
			p.Options[k] = os.ExpandEnv(v)
		}
		p.Model, p.ModelUnset = expandNoting(p.Model)
		names := slices.Clone(p.Args)
		for _, k := range slices.Sorted(maps.Keys(p.Options)) {
			names = append(names, p.Options[k])
		}
		sb, err := m.commandSandbox(key, p.Confine, p.Sandbox, "", m.Dir, names, true)
		if err != nil {
			return err
		}
		p.Sandbox = sb
		if p.SHA256 != "" {
			if err := checkDigest(p.Command, p.SHA256); err != nil {
				return m.ErrorAt(key+".sha256", "%v", err)
			}
		}
		m.Providers[name] = p
	}
	return nil
}

// checkTelemetry checks [telemetry] and expands its endpoint.
func (m *Manifest) checkTelemetry() error {
	m.Telemetry.OTLPEndpoint = os.ExpandEnv(m.Telemetry.OTLPEndpoint)
	if p := m.Telemetry.Protocol; p != "" && p != "http/protobuf" && p != "grpc" {
		return m.ErrorAt("telemetry.protocol", "unknown protocol %q (http/protobuf or grpc)", p)
	}
	return nil
}

// checkStore checks [store] and fills in its defaults: a SQLite file in .agenthost.
func (m *Manifest) checkStore() error {
	if !slices.Contains(storeKinds, m.Store.Kind) {
		return m.ErrorAt("store.kind", "unknown store kind %q (memory, sqlite or postgres)", m.Store.Kind)
	}
	if m.Store.Kind == "postgres" {
		m.Store.URL = os.ExpandEnv(m.Store.URL)
		if m.Store.URL == "" {
			return m.ErrorAt("store.url", `a postgres store needs a url: url = "${DATABASE_URL}" or postgres://user@host:5432/db`)
		}
	}
	if m.Store.Kind == "" {
		m.Store.Kind = "sqlite"
	}
	if m.Store.Path == "" {
		m.Store.Path = ".agenthost/sessions.db"
	}
	m.Store.Path = m.Resolve(m.Store.Path)
	if m.Store.KeyFile != "" {
		if m.Store.Kind == "memory" {
			return m.ErrorAt("store.key_file", "a memory store keeps nothing at rest to seal")
		}
		m.Store.KeyFile = m.Resolve(m.Store.KeyFile)
	}
	return nil
}

// checkPluginsAndServers checks [[plugins]] then [[mcp_servers]]: their names share one
// namespace (a tool's owner).
func (m *Manifest) checkPluginsAndServers() error {
	names := map[string]int{}
	for i := range m.Plugins {
		if err := m.checkPlugin(i, names); err != nil {
			return err
		}
	}
	for i := range m.MCPServers {
		if err := m.checkMCPServer(i, names); err != nil {
			return err
		}
	}
	return nil
}

// ProviderNames lists the manifest's [providers.NAME] tables by name.
func (m *Manifest) ProviderNames() []string {
	var out []string
	for n := range m.Providers {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Resolve makes a path relative to the manifest's directory absolute.
func (m *Manifest) Resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(m.Dir, p)
}

// resolveCommand resolves a command with a slash against the manifest's directory. A
// bare name is looked for next to the running agenthost binary first, where `make
// install`, `go install` and a release archive put the adapters, so a manifest works
// from any directory without PATH set up; otherwise it is left for a PATH lookup when
// the provider starts.
func (m *Manifest) resolveCommand(c string) string {
	if strings.ContainsRune(c, '/') {
		return m.Resolve(c)
	}
	if exe, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(exe), c)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside
		}
	}
	return c
}

// checkDigest compares a pinned file's sha256 with the manifest's. Only a regular file
// can be pinned: the file is opened without blocking (a FIFO would otherwise wait for a
// writer, and the manifest would never load) and anything else is refused. The provider
// client checks its adapter again when it starts it, and runs the bytes it checked.
func checkDigest(path, want string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("cannot read %s to check its digest: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return fmt.Errorf("cannot read %s to check its digest: %v", path, err)
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("cannot check the digest of %s: not a regular file (mode %s)", path, fi.Mode().Type())
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("read %s: %v", path, err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if !strings.EqualFold(got, want) {
		return fmt.Errorf("digest mismatch for %s: manifest pins %s, file is %s", path, want, got)
	}
	return nil
}

// expandNoting is os.ExpandEnv that also returns, when the result is empty, the
// variables that were unset or empty on the way.
func expandNoting(s string) (string, []string) {
	var unset []string
	out := os.Expand(s, func(k string) string {
		v := os.Getenv(k)
		if v == "" {
			unset = append(unset, k)
		}
		return v
	})
	if out != "" {
		unset = nil
	}
	return out, unset
}
