package loop

import (
	"context"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// CallInfo says which run a call belongs to. The loop puts it in the context
// of the whole run (hooks, guardrails, context strategies and the model see it,
// CallID empty) and of every Tool.Call (CallID set), so a plugin host can key
// per-session state (the sandbox keys plugin instances by SessionID) without a
// wider interface.
type CallInfo struct {
	SessionID, RunID, Agent, CallID string
	// User is the run's user (RunInput.User), "" when anonymous.
	User string
}

type callInfoKey struct{}

// callIDKey holds a *string: the loop adds a tool call's id to a context that already
// carries the run's CallInfo, without boxing a whole CallInfo for every call.
type callIDKey struct{}

// WithCallInfo returns ctx carrying info.
func WithCallInfo(ctx context.Context, info CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, info)
}

// CallInfoFrom returns the CallInfo of ctx, if the loop set one.
func CallInfoFrom(ctx context.Context) (CallInfo, bool) {
	var info CallInfo
	ok := false
	switch v := ctx.Value(callInfoKey{}).(type) {
	case CallInfo: // WithCallInfo's
		info, ok = v, true
	case *CallInfo: // a run's (runctx.go)
		info, ok = *v, true
	}
	if id, _ := ctx.Value(callIDKey{}).(*string); id != nil {
		info.CallID, ok = *id, true
	}
	return info, ok
}

// MaxUserLen bounds a run's user name, in bytes.
const MaxUserLen = 256

// CheckUser says what is wrong with a run's user name: one the stores key memories by
// and the CLI prints, so it is valid UTF-8 without control characters, and bounded.
// "" (anonymous) is valid.
func CheckUser(u string) error {
	switch {
	case len(u) > MaxUserLen:
		return fmt.Errorf("user name of %d bytes, longer than %d", len(u), MaxUserLen)
	case !utf8.ValidString(u):
		return errors.New("user name is not valid UTF-8")
	}
	for _, r := range u {
		if unicode.IsControl(r) {
			return fmt.Errorf("user name %q has a control character", u)
		}
	}
	return nil
}
