package providers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/agenthost/agenthost/providers/proto"
)

// ErrChecksumMismatch is wrapped by Start when the executable's sha256 differs
// from ClientConfig.SHA256.
var ErrChecksumMismatch = errors.New("sha256 mismatch")

// ClientConfig says how to run one adapter executable. It mirrors a
// [providers.NAME] table of agent.toml.
type ClientConfig struct {
	Name    string   // the manifest's provider name, used in errors and logs
	Command string   // executable path; resolved through PATH when it has no slash
	Args    []string // arguments after the command name
	// Env lists what the adapter may see of the environment: "NAME" passes the
	// host's value through (when set), "NAME=VALUE" sets it. Nothing else of
	// the host environment reaches the adapter.
	Env []string
	// SHA256 pins the executable (hex). Empty means no pin. A mismatch refuses
	// to start; the check is repeated on every restart.
	SHA256 string
	// StartTimeout bounds the handshake; 0 means 30s.
	StartTimeout time.Duration
	// Options is the manifest's options table, delivered through the
	// Configure RPC after every (re)start.
	Options map[string]string
	// Stderr receives the adapter's stderr and go-plugin warnings; nil
	// discards them.
	Stderr io.Writer
	// FirstTokenTimeout bounds the wait for a call's first event, IdleTimeout
	// the silence between two events. A call that exceeds either fails with a
	// retryable error (the loop retries it like a transport error) and the
	// process is kept. 0 means the default (DefaultFirstTokenTimeout,
	// DefaultIdleTimeout); a negative value disables the timeout.
	FirstTokenTimeout time.Duration
	IdleTimeout       time.Duration
}

func (c ClientConfig) firstTokenTimeout() time.Duration {
	return timeoutOr(c.FirstTokenTimeout, DefaultFirstTokenTimeout)
}

func (c ClientConfig) idleTimeout() time.Duration {
	return timeoutOr(c.IdleTimeout, DefaultIdleTimeout)
}

func timeoutOr(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return d
}

// Client is the host's handle on one adapter process. It is safe for
// concurrent use: concurrent Streams share the process. When the process dies
// the call in flight fails with a retryable KindProvider *Error and the next
// call starts a fresh process (which is configured again).
type Client struct {
	cfg ClientConfig

	mu     sync.Mutex
	proc   *plugin.Client
	rpc    providerpb.ProviderClient
	gen    int  // incremented on every (re)start, so a stale failure cannot mark a fresh process broken
	broken bool // the current process failed; restart before the next call
	closed bool
}

// Start launches the adapter, completes the go-plugin handshake over AutoMTLS
// and sends it the options. On error no process is left running.
func Start(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if cfg.Command == "" {
		return nil, fmt.Errorf("start provider %q: no command", cfg.Name)
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	c := &Client{cfg: cfg}
	if err := c.launch(ctx); err != nil {
		return nil, fmt.Errorf("start provider %q: %w", cfg.Name, err)
	}
	return c, nil
}

// CleanupClients kills every adapter process started by Start that has not
// been closed. A host calls it once, on its way out; adapters also exit by
// themselves when the host dies without calling it.
func CleanupClients() { plugin.CleanupClients() }

// launch starts a process and configures it; c.mu is held or c is not shared yet.
func (c *Client) launch(ctx context.Context) error {
	cmd := exec.Command(c.cfg.Command, c.cfg.Args...)
	cmd.Env = adapterEnv(c.cfg.Env)
	var secure *plugin.SecureConfig
	if c.cfg.SHA256 != "" {
		want, err := checkDigest(cmd.Path, c.cfg.SHA256)
		if err != nil {
			return err
		}
		secure = &plugin.SecureConfig{Checksum: want, Hash: sha256.New()}
	}
	tail := newStderrTail(stderrTailBytes)
	proc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  handshake,
		Plugins:          plugin.PluginSet{pluginName: &grpcPlugin{}},
		Cmd:              cmd,
		SkipHostEnv:      true,
		SecureConfig:     secure,
		AutoMTLS:         true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		GRPCDialOptions:  grpcDialOptions,
		StartTimeout:     c.cfg.StartTimeout,
		Managed:          true,
		Stderr:           io.MultiWriter(c.cfg.Stderr, tail),
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:   "provider." + c.cfg.Name,
			Output: c.cfg.Stderr,
			Level:  hclog.Warn,
		}),
	})
	rpc, err := connect(ctx, proc)
	if err != nil {
		if ctx.Err() != nil {
			proc.Kill()
			return err
		}
		err = startFailure(err, cmd, proc, tail, c.cfg.StartTimeout)
		proc.Kill()
		return err
	}
	if _, err := rpc.Configure(ctx, &providerpb.ConfigureRequest{Options: c.cfg.Options}); err != nil {
		proc.Kill()
		return fmt.Errorf("configure: %w", err)
	}
	c.proc, c.rpc = proc, rpc
	c.gen++
	c.broken = false
	return nil
}

// connect runs the handshake, giving up early when ctx ends.
func connect(ctx context.Context, proc *plugin.Client) (providerpb.ProviderClient, error) {
	type result struct {
		rpc providerpb.ProviderClient
		err error
	}
	done := make(chan result, 1)
	go func() {
		cp, err := proc.Client()
		if err != nil {
			done <- result{err: err}
			return
		}
		raw, err := cp.Dispense(pluginName)
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{rpc: raw.(providerpb.ProviderClient)}
	}()
	select {
	case r := <-done:
		return r.rpc, r.err
	case <-ctx.Done():
		proc.Kill()
		<-done
		return nil, ctx.Err()
	}
}

// checkDigest compares the executable's sha256 with the pin. go-plugin checks
// again before exec; this earlier check exists to say which file and which
// digests, which go-plugin's error does not.
func checkDigest(path, pin string) ([]byte, error) {
	want, err := hex.DecodeString(strings.TrimPrefix(strings.ToLower(pin), "sha256:"))
	if err != nil || len(want) != sha256.Size {
		return nil, fmt.Errorf("sha256 pin %q is not 64 hex digits", pin)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("check sha256: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("check sha256 of %s: %w", path, err)
	}
	if got := h.Sum(nil); string(got) != string(want) {
		return nil, fmt.Errorf("%w for %s: pinned %x, file has %x", ErrChecksumMismatch, path, want, got)
	}
	return want, nil
}

func adapterEnv(spec []string) []string {
	env := []string{}
	for _, e := range spec {
		if strings.Contains(e, "=") {
			env = append(env, e)
		} else if v, ok := os.LookupEnv(e); ok {
			env = append(env, e+"="+v)
		}
	}
	return env
}

// conn returns the live process, restarting it first when the last one failed.
func (c *Client) conn(ctx context.Context) (providerpb.ProviderClient, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, 0, fmt.Errorf("provider %q: client is closed", c.cfg.Name)
	}
	if c.broken || c.proc.Exited() {
		stopProcess(c.proc, c.cfg.Name)
		if err := c.launch(ctx); err != nil {
			return nil, 0, &Error{Kind: KindProvider, Message: fmt.Sprintf("provider %q: restart adapter: %v", c.cfg.Name, err)}
		}
	}
	return c.rpc, c.gen, nil
}

// Info asks the adapter to describe itself.
func (c *Client) Info(ctx context.Context) (*Info, error) {
	rpc, gen, err := c.conn(ctx)
	if err != nil {
		return nil, err
	}
	info, err := rpc.Info(ctx, &providerpb.InfoRequest{})
	if err != nil {
		return nil, c.transportError(ctx, gen, "during Info", err)
	}
	return info, nil
}

// procAlive reports whether the current process is running.
func (c *Client) procAlive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc != nil && !c.proc.Exited()
}

// PID is the adapter's process id (0 when none is running), for diagnostics.
func (c *Client) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return 0
	}
	pid, _ := strconv.Atoi(c.proc.ID())
	return pid
}

// Close stops the adapter process: go-plugin asks it to shut down and waits for
// it; an adapter that has not exited within closeGrace (stopped with SIGSTOP, hung
// in a call) is killed. Close returns when the process is gone, or after a further
// closeGrace at most, so a stuck adapter cannot keep the host from exiting.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	proc := c.proc
	c.mu.Unlock()
	if proc == nil {
		return nil
	}
	return stopProcess(proc, c.cfg.Name)
}

// closeGrace is how long a shutdown may take before the process is killed.
const closeGrace = time.Second

// stopProcess is go-plugin's Kill with a deadline: its graceful shutdown is an RPC
// to the adapter, which a stopped or hung adapter never answers.
func stopProcess(proc *plugin.Client, name string) error {
	done := make(chan struct{})
	go func() { proc.Kill(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(closeGrace):
	}
	if pid, err := strconv.Atoi(proc.ID()); err == nil && pid > 0 {
		if p, err := os.FindProcess(pid); err == nil {
			p.Kill() // SIGKILL ends a stopped process too
		}
	}
	select {
	case <-done:
		return nil
	case <-time.After(closeGrace):
		return fmt.Errorf("provider %q: adapter process did not exit after SIGKILL", name)
	}
}

// transportError turns a gRPC failure into the caller's cancellation or a
// retryable provider error, and schedules a restart of the process.
func (c *Client) transportError(ctx context.Context, gen int, when string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	c.mu.Lock()
	proc := c.proc
	if gen == c.gen {
		c.broken = true
	}
	c.mu.Unlock()
	what := "lost its connection"
	// The connection usually drops a moment before the exit is reaped.
	for i := 0; i < 300; i++ {
		if proc.Exited() {
			what = "exited"
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &Error{
		Kind:      KindProvider,
		Message:   fmt.Sprintf("provider %q: adapter process %s %s (%v); it will be restarted for the next call", c.cfg.Name, what, when, err),
		Retryable: true,
	}
}
