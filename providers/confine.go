package providers

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/hashicorp/go-plugin"

	"github.com/agenthost/agenthost/confine"
)

// A confined adapter (ClientConfig.Confine) is started the way an [[mcp_servers]] command
// is: confine.Wrap rewrites the command into "agenthost __confine … -- ADAPTER ARGS",
// which restricts itself with Landlock and executes the adapter.
//
// What go-plugin needs of the adapter then: on Unix the adapter listens on a Unix socket
// it creates (a temporary file name, removed, then bound) and tells the host its path on
// stdout; the host dials it. net = false leaves that connection alone: its seccomp filter
// lets the adapter make a Unix stream socket, bind and listen (it only refuses connect(2)
// and every other kind of socket), and Landlock's scopes stop the adapter reaching out,
// not the host reaching in; but the adapter must be able to create and remove files
// where the socket goes, which is its temporary directory (its TMPDIR, else /tmp) unless
// PLUGIN_UNIX_SOCKET_DIR names another. Rather than grant the adapter the whole of /tmp,
// each confined process gets a private directory (0700) inside the one it would have used
// (TMPDIR when its env passes one, else /tmp; not the host's TMPDIR, which the adapter
// never sees and which may be too long for a socket's path, 107 bytes), named by
// PLUGIN_UNIX_SOCKET_DIR and added to its write list, and nothing else. The directory is
// removed with its process, as a pinned copy is (pin.go).

// newSocketDir makes a confined process's socket directory in the temporary directory of
// an adapter whose environment is env; it is tracked like a pinned copy, so Close, a
// restart and CleanupClients remove it.
func newSocketDir(env []string) (*pinnedExe, error) {
	base := "/tmp"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok && v != "" {
			base = v
		}
	}
	dir, err := os.MkdirTemp(base, "agenthost-sock-")
	if err != nil {
		return nil, fmt.Errorf("socket directory for the confined adapter: %w", err)
	}
	d := &pinnedExe{dir: dir}
	live.Lock()
	live.m[d] = true
	live.Unlock()
	return d, nil
}

// confineCmd rewrites cmd to run under spec through exe, with sock as the directory
// go-plugin puts its socket in (readable and writable for the adapter).
func confineCmd(cmd *exec.Cmd, exe string, spec confine.Spec, sock string) error {
	spec.Write = append(slices.Clone(spec.Write), sock)
	cmd.Env = append(cmd.Env, plugin.EnvUnixSocketDir+"="+sock)
	return confine.Wrap(cmd, exe, spec)
}
