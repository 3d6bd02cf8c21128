package keyless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agenthost/agenthost/ociplugin"
)

// Sigstore's client verifies in a program of its own, HelperName, which this package
// starts for each check (cmd/agenthost-sigstore): linked into agenthost, sigstore-go and
// what it brings (Rekor's types, their OpenAPI models and validators) were ~5 MB of the
// binary and ~2 ms of the package init every start pays, for a check made only when a
// keyless-signed plugin is pulled or a release verified (ARCHITECTURE.md). What this
// package does itself is everything but the cryptography: the registry (referrers,
// bundles, attaching), the limits on what it reads, and the messages.
//
// The helper is looked for beside the running executable only, not on PATH: a check
// that says yes or no to a signature is not taken from whatever a PATH names. `make
// build`, `go install …/cmd/...`, the release archives and the image put it there.

// HelperName is the helper's file name.
const HelperName = "agenthost-sigstore"

// HelperPath, when set, is the helper to start instead of HelperName beside the running
// executable (tests, and programs embedding this package).
var HelperPath string

// Requests a helper answers.
const (
	OpCheck  = "check"  // the policy and its trusted root can be used
	OpVerify = "verify" // which bundle verifies over the artifact
	OpNames  = "names"  // the one bundle signs the digest (not verified)
)

// HelperRequest is one request to the helper, on its standard input.
type HelperRequest struct {
	Op     string            `json:"op"`
	Policy ociplugin.Keyless `json:"policy"`
	// Digest is the artifact's manifest digest, "sha256:…" (verify of an OCI artifact,
	// names); Blob, instead, the bytes a bundle signs (verify of a release's file).
	Digest  string   `json:"digest,omitempty"`
	Blob    []byte   `json:"blob,omitempty"`
	Bundles [][]byte `json:"bundles,omitempty"`
}

// HelperResponse is the helper's answer, on its standard output.
type HelperResponse struct {
	// Verified is the index of the bundle that verified; absent when none did, so that an
	// answer that says nothing (`{}`) is never read as a signature that verified.
	Verified *int     `json:"verified,omitempty"`
	Errors   []string `json:"errors,omitempty"`  // why each bundle did not, when none did
	Content  string   `json:"content,omitempty"` // names: "message-signature" or "dsse-envelope"
	Error    string   `json:"error,omitempty"`   // the request failed as a whole (the policy, its trusted root)
}

// MaxHelperRequest bounds a request: maxBundles bundles of maxBundle bytes, base64, and a
// blob of as much.
const MaxHelperRequest = 2 * (maxBundles + 1) * maxBundle

// helperTimeout bounds one check: reading a trusted root and verifying up to maxBundles
// bundles takes well under a second. A variable for the test of a helper that hangs.
var helperTimeout = time.Minute

// helper is the path of the helper to start, or why there is none.
func helper() (string, error) {
	if HelperPath != "" {
		return HelperPath, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("keyless verification runs in %s beside agenthost: %w", HelperName, err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	p := filepath.Join(filepath.Dir(exe), HelperName)
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("keyless verification runs in %s, which is not beside %s; build it with: go install github.com/agenthost/agenthost/cmd/%s@latest (make build in a checkout)", HelperName, exe, HelperName)
	case err != nil:
		return "", fmt.Errorf("keyless verification runs in %s: %w", HelperName, err)
	case !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0:
		return "", fmt.Errorf("keyless verification runs in %s, and %s is not an executable file", HelperName, p)
	}
	return p, nil
}

// call starts the helper with req and returns its answer; a helper that cannot be
// started, fails or answers something else is an error saying so.
func call(req HelperRequest) (HelperResponse, error) {
	p, err := helper()
	if err != nil {
		return HelperResponse{}, err
	}
	in, err := json.Marshal(req)
	if err != nil {
		return HelperResponse{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), helperTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p)
	cmd.Stdin = bytes.NewReader(in)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limited{b: &out, n: 4 << 20}, &limited{b: &stderr, n: 4 << 10}
	cmd.Env = []string{}        // nothing of this process's environment is the helper's business
	cmd.WaitDelay = time.Second // a child of a killed helper holding its output open does not hold us
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer within %s (%w)", helperTimeout, err)
		}
		return HelperResponse{}, fmt.Errorf("%s: %w: %s", HelperName, err, strings.TrimSpace(stderr.String()))
	}
	var res HelperResponse
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return HelperResponse{}, fmt.Errorf("%s answered something else than its answer: %w", HelperName, err)
	}
	if res.Error != "" {
		return res, nil
	}
	switch {
	case req.Op == OpVerify && res.Verified != nil && (*res.Verified < 0 || *res.Verified >= len(req.Bundles)):
		return HelperResponse{}, fmt.Errorf("%s answered bundle %d, not one of the %d asked", HelperName, *res.Verified, len(req.Bundles))
	case req.Op == OpVerify && res.Verified == nil && len(res.Errors) != len(req.Bundles):
		return HelperResponse{}, fmt.Errorf("%s answered for %d bundles, not the %d asked", HelperName, len(res.Errors), len(req.Bundles))
	case req.Op == OpNames && res.Content != "message-signature" && res.Content != "dsse-envelope":
		return HelperResponse{}, fmt.Errorf("%s answered no kind of bundle (%q)", HelperName, res.Content)
	}
	return res, nil
}

// limited keeps the first n bytes written to it and drops the rest.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
