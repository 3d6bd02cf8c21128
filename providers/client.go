package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/confine"
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
	// to start; the check is repeated on every restart, and what runs is a private
	// copy of exactly the bytes that were checked (pin.go).
	SHA256 string
	// StartTimeout bounds the handshake; 0 means 30s.
	StartTimeout time.Duration
	// Options is the manifest's options table, delivered through the
	// Configure RPC after every (re)start.
	Options map[string]string
	// Stderr receives the adapter's stderr (what it writes before and while it
	// serves) and go-plugin warnings; nil discards them.
	Stderr io.Writer
	// FirstTokenTimeout bounds the wait for a call's first event, IdleTimeout
	// the silence between two events. A call that exceeds either fails with a
	// retryable error (the loop retries it like a transport error) and the
	// process is kept. 0 means the default (DefaultFirstTokenTimeout,
	// DefaultIdleTimeout); a negative value disables the timeout.
	FirstTokenTimeout time.Duration
	IdleTimeout       time.Duration
	// Confine, when set, runs the adapter under Landlock through ConfineExe (the agenthost
	// binary, which handles confine.Subcommand), exactly as an MCP server command is run;
	// the adapter also gets a private directory for go-plugin's socket (confine.go).
	Confine    *confine.Spec
	ConfineExe string
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
	exe    *pinnedExe // the running process's verified copy; nil without a pin
	sock   *pinnedExe // the running process's socket directory (private to this user)
	tls    bool       // the connection to it uses go-plugin's AutoMTLS (tls.go)
	gen    uint64     // a new processSerial on every (re)start, so a stale failure cannot mark a fresh process broken
	broken bool       // the current process failed; restart before the next call
	// sessions says the current process serves Session; idle holds its streams
	// between calls (session.go).
	sessions bool
	idle     []*session
	closed   bool
}

// Start launches the adapter, completes the go-plugin handshake (over a Unix socket in a
// directory private to this user; AutoMTLS only when that cannot be made sure, tls.go)
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
func CleanupClients() {
	plugin.CleanupClients()
	removeAllCopies()
}

// processSerial numbers the adapter processes this host starts, across clients: it
// is Error.Process, which names one process among all of them.
var processSerial atomic.Uint64

// launch starts a process and configures it; c.mu is held or c is not shared yet.
// A pinned adapter runs from a private copy of the bytes that were verified (pin.go);
// the previous process's copy, if any, is removed first (that process is stopped).
func (c *Client) launch(ctx context.Context) error {
	c.exe.remove()
	c.sock.remove()
	c.exe, c.sock = nil, nil
	lookup := exec.Command(c.cfg.Command) // resolved through PATH, as exec would
	if err := missingAdapter(c.cfg.Command, lookup); err != nil {
		return err
	}
	path := lookup.Path
	run := path
	var exe, sock *pinnedExe
	var err error
	if c.cfg.SHA256 != "" {
		if exe, err = copyVerified(path, c.cfg.SHA256); err != nil {
			return err
		}
		if afterVerify != nil {
			afterVerify(path)
		}
		run = exe.path
	}
	// Every adapter's socket goes in a private directory of its own (confine.go, tls.go).
	if sock, err = newSocketDir(adapterEnv(c.cfg.Env)); err != nil {
		exe.remove()
		return err
	}
	proc, rpc, err := c.handshake(ctx, path, run, sock)
	if err != nil {
		exe.remove()
		sock.remove()
		return err
	}
	if _, err := rpc.Configure(ctx, &providerpb.ConfigureRequest{Options: c.cfg.Options}); err != nil {
		proc.Kill()
		exe.remove()
		sock.remove()
		// The adapter's own words, not "rpc error: code = InvalidArgument desc = ...":
		// they are what the user acts on (a missing key, an unknown option).
		return fmt.Errorf("configure: %s", status.Convert(err).Message())
	}
	c.dropIdleSessions()
	c.sessions = probeSession(ctx, rpc, c.cfg.StartTimeout)
	if !c.sessions && ctx.Err() != nil {
		// Cancelled while asking: not an answer, so not a reason to use Stream for
		// this process's whole life.
		proc.Kill()
		exe.remove()
		sock.remove()
		return ctx.Err()
	}
	c.proc, c.rpc, c.exe, c.sock = proc, rpc, exe, sock
	c.gen = processSerial.Add(1)
	c.broken = false
	return nil
}

// handshake starts the executable run (named path in errors and in its argv[0]) and
// completes go-plugin's handshake; with sock, confined (confine.go).
func (c *Client) handshake(ctx context.Context, path, run string, sock *pinnedExe) (*plugin.Client, providerpb.ProviderClient, error) {
	cmd := exec.Command(run, c.cfg.Args...)
	cmd.Args[0] = c.cfg.Command
	cmd.Env = adapterEnv(c.cfg.Env)
	switch {
	case c.cfg.Confine != nil:
		if err := confineCmd(cmd, c.cfg.ConfineExe, *c.cfg.Confine, sock.dir); err != nil {
			return nil, nil, err
		}
	default:
		cmd.Env = append(cmd.Env, plugin.EnvUnixSocketDir+"="+sock.dir)
	}
	c.tls = needTLS(sock.dir)
	tail := newStderrTail(stderrTailBytes)
	proc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  handshake,
		Plugins:          plugin.PluginSet{pluginName: &grpcPlugin{}},
		Cmd:              cmd,
		SkipHostEnv:      true,
		AutoMTLS:         c.tls,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		GRPCDialOptions:  grpcDialOptions(),
		StartTimeout:     c.cfg.StartTimeout,
		Managed:          true,
		Stderr:           io.MultiWriter(c.cfg.Stderr, tail),
		// Once serving, go-plugin swaps the adapter's os.Stderr for a pipe to the host
		// (its stdio service): what the adapter logs while it serves arrives here.
		SyncStderr: io.MultiWriter(c.cfg.Stderr, tail),
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:   "provider." + c.cfg.Name,
			Output: c.cfg.Stderr,
			Level:  hclog.Warn,
		}),
	})
	rpc, err := connect(ctx, proc)
	switch {
	case err == nil:
		return proc, rpc, nil
	case ctx.Err() != nil:
		proc.Kill()
		return nil, nil, err
	}
	err = startFailure(err, path, cmd, proc, tail, c.cfg.StartTimeout)
	proc.Kill()
	return nil, nil, err
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
func (c *Client) conn(ctx context.Context) (providerpb.ProviderClient, uint64, error) {
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
	c.dropIdleSessions()
	proc, exe, sock := c.proc, c.exe, c.sock
	c.exe, c.sock = nil, nil
	c.mu.Unlock()
	if proc == nil {
		return nil
	}
	err := stopProcess(proc, c.cfg.Name)
	exe.remove()
	sock.remove()
	return err
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
func (c *Client) transportError(ctx context.Context, gen uint64, when string, err error) error {
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
		Process:   gen,
	}
}
