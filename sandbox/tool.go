package sandbox

import (
	"context"
	"errors"
	"fmt"
)

// InvokeTool calls a tool with its arguments JSON. A plugin failure (trap,
// timeout, limit, denied permission, bad output) is an IsError result whose
// text says what happened; the returned error is only for the caller's
// mistakes: an unknown tool, a closed plugin, a cancelled context.
func (p *Plugin) InvokeTool(ctx context.Context, name string, args []byte) (CallResult, error) {
	if len(args) == 0 {
		args = []byte("{}")
	}
	if !p.hasTool(name) {
		return CallResult{}, fmt.Errorf("plugin %q has no tool %q", p.name, name)
	}
	res, err := p.abi.callTool(ctx, name, args)
	var fault *Fault
	if errors.As(err, &fault) {
		return p.withFSHint(errorResult(fault)).validUTF8(), nil
	}
	return p.withFSHint(res).validUTF8(), err
}

func (p *Plugin) hasTool(name string) bool {
	p.toolsMu.RLock()
	defer p.toolsMu.RUnlock()
	for _, t := range p.tools {
		if t.Name == name {
			return true
		}
	}
	return false
}
