package sandbox

import (
	"context"
)

// admittedKey marks a call made for a run the host admitted (WaitForInstance).
type admittedKey struct{}

// WaitForInstance marks ctx as an admitted run's: a call made with it waits for one of
// the plugin's instances for as long as ctx allows (the run's deadline, the call's
// timeout in the tool policy, the caller going away), and the plugin's timeout bounds
// the call from the moment it has an instance. Without the mark the plugin's timeout
// bounds the whole call, the wait included (a caller no admission bounds must not wait
// behind spinning calls for longer than a call may take).
//
// The host's door marks every run it admits: its admission bounds the runs in flight,
// so the wait is bounded too, and an admitted run's tool call is not refused as busy
// merely because other runs' calls were ahead of it.
func WaitForInstance(ctx context.Context) context.Context {
	return context.WithValue(ctx, admittedKey{}, true)
}

// instanceWait is the context a call waits for an instance under: ctx itself for an
// admitted run's call, else ctx bounded by the plugin's timeout (errTimedOut).
func (p *Plugin) instanceWait(ctx context.Context) (context.Context, context.CancelFunc) {
	if admitted, _ := ctx.Value(admittedKey{}).(bool); admitted {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, p.perms.Timeout, errTimedOut)
}

// callTimer bounds a call by the plugin's timeout from now, when it has its instance.
func (p *Plugin) callTimer(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, p.perms.Timeout, errTimedOut)
}
