package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/sys"
)

// FaultKind says why a plugin call failed.
type FaultKind string

const (
	FaultTimeout FaultKind = "timeout" // the call ran past Permissions.Timeout
	FaultMemory  FaultKind = "memory"  // a memory grew past Permissions.Memory
	FaultTrap    FaultKind = "trap"    // unreachable, stack overflow, out-of-bounds access, a panic...
	FaultExit    FaultKind = "exit"    // the module called proc_exit with a non-zero code
	FaultDenied  FaultKind = "denied"  // the plugin used something it was not granted
	FaultInput   FaultKind = "input"   // the input exceeded Permissions.MaxInput
	FaultOutput  FaultKind = "output"  // the output exceeded Permissions.MaxOutput
	FaultGuest   FaultKind = "guest"   // the plugin reported an error itself (error_set, or invalid output)
	FaultHost    FaultKind = "host"    // a host function failed (e.g. the Host's KV store)
	FaultBusy    FaultKind = "busy"    // every instance was in use until the call's timeout
)

// Fault is the failure of a plugin call: something the plugin did or hit,
// as opposed to a mistake of the caller. InvokeTool turns it into an error
// result; CallExport returns it (use errors.As to inspect it).
type Fault struct {
	Plugin string
	Export string
	Kind   FaultKind
	Err    error
}

// Error is valid UTF-8 even when the plugin's own message (error_set) is not.
func (f *Fault) Error() string {
	return validString(fmt.Sprintf("plugin %q: %s: %v", f.Plugin, f.Export, f.Err))
}

func (f *Fault) Unwrap() error { return f.Err }

var (
	errClosed   = errors.New("sandbox: plugin is closed")
	errTimedOut = errors.New("call timed out")
)

// callStateKey finds a call's state in the context host functions receive.
type callStateKey struct{}

// callState is what a call learns while it runs, so that its failure can be
// reported by cause rather than by the symptom wazero saw.
type callState struct {
	guard *netGuard

	mu      sync.Mutex
	fault   error
	notices int // notifications the guest sent, forwarded up to maxCallNotices
}

// notice counts a notification of the call and says whether it may be forwarded.
func (s *callState) notice() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notices++
	return s.notices <= maxCallNotices
}

func (s *callState) droppedNotices() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(0, s.notices-maxCallNotices)
}

func (s *callState) setFault(err error) {
	s.mu.Lock()
	if s.fault == nil {
		s.fault = err
	}
	s.mu.Unlock()
}

func (s *callState) hostFault() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fault
}

// noInstance explains a call that got none of the plugin's size instances
// (or wasi slots) after waiting since start: err is what ended the wait, ctx
// the caller's context. A wait that a deadline ended, the plugin's timeout or
// the caller's, is "busy": the instances are not broken, only taken, and the
// message says so, so that nobody goes looking for a bug in the plugin. A
// cancelled caller gets its own cause back.
func (p *Plugin) noInstance(ctx context.Context, export string, size int, start time.Time, err error) error {
	waited := p.perms.Timeout
	switch {
	case errors.Is(err, errTimedOut) && ctx.Err() == nil:
	case errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		waited = time.Since(start).Round(time.Millisecond)
	default:
		return fmt.Errorf("plugin %q: %s: %w", p.name, export, err)
	}
	return &Fault{Plugin: p.name, Export: export, Kind: FaultBusy,
		Err: fmt.Errorf("busy: all %d instances in use for %s", size, waited)}
}

// classify explains a failed call. parent is the caller's context, timed the
// per-call one; watch may be nil. guestErr says err is the plugin's own
// error message (Extism's error_set) rather than a trap.
func (p *Plugin) classify(parent, timed context.Context, st *callState, watch *memoryWatch, export string, err error, guestErr bool) error {
	fault := func(kind FaultKind, e error) error {
		return &Fault{Plugin: p.name, Export: export, Kind: kind, Err: e}
	}
	switch {
	case parent.Err() != nil:
		return fmt.Errorf("plugin %q: %s: %w", p.name, export, context.Cause(parent))
	case st.guard != nil && st.guard.deniedErr() != nil:
		return fault(FaultDenied, st.guard.deniedErr())
	case st.hostFault() != nil:
		e := st.hostFault()
		if strings.Contains(e.Error(), "permission") {
			return fault(FaultDenied, e)
		}
		return fault(FaultHost, e)
	case watch != nil && watch.exceeded.Load():
		return fault(FaultMemory, fmt.Errorf("memory limit %s exceeded", formatSize(int64(watch.limit))))
	case errors.Is(context.Cause(timed), errTimedOut):
		return fault(FaultTimeout, fmt.Errorf("timed out after %s", p.perms.Timeout))
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) && exit.ExitCode() != 0 {
		return fault(FaultExit, fmt.Errorf("exited with code %d", exit.ExitCode()))
	}
	if guestErr {
		return fault(FaultGuest, err)
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	msg = strings.TrimSuffix(msg, " (recovered by wazero)")
	msg = strings.TrimPrefix(msg, "wasm error: ")
	return fault(FaultTrap, fmt.Errorf("trapped: %s", msg))
}
