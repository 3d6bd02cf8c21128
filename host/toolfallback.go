package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/agenthost/agenthost/loop"
)

// toolFallbacks is the loop's Config.ToolFallbacks from the plugin tools' fallback
// lists, for an agent whose tools are own. A fallback is called with the failed call's
// arguments, so it must be a tool the agent may use whose input schema is the same
// (compared as JSON values); otherwise the agent is not built and the error names the
// key. A tool the agent may not use keeps no fallbacks (its calls are refused anyway).
func (h *Host) toolFallbacks(own []loop.Tool) (map[string][]string, error) {
	specs := make(map[string]loop.ToolSpec, len(own))
	for _, t := range own {
		specs[t.Spec().Name] = t.Spec()
	}
	var out map[string][]string
	for i, p := range h.Manifest.Plugins {
		for j, d := range p.Tools {
			from, ok := specs[d.Name]
			if len(d.Fallback) == 0 || !ok {
				continue
			}
			key := fmt.Sprintf("plugins.%d.tools.%d.fallback", i, j)
			for _, fb := range d.Fallback {
				to, ok := specs[fb]
				if !ok {
					return nil, h.Manifest.ErrorAt(key, "no tool %q among the agent's tools: a fallback must be a loaded tool the agent may use", fb)
				}
				if !sameSchema(from.InputSchema, to.InputSchema) {
					return nil, h.Manifest.ErrorAt(key, "%q takes other arguments than %q (its input_schema differs): a fallback is called with the same arguments", fb, d.Name)
				}
			}
			if out == nil {
				out = map[string][]string{}
			}
			out[d.Name] = append([]string(nil), d.Fallback...)
		}
	}
	return out, nil
}

// sameSchema reports whether two input schemas are the same JSON value (none and null
// are the same: any arguments).
func sameSchema(a, b json.RawMessage) bool {
	norm := func(s json.RawMessage) any {
		s = bytes.TrimSpace(s)
		if len(s) == 0 || string(s) == "null" {
			return nil
		}
		var v any
		if json.Unmarshal(s, &v) != nil {
			return string(s)
		}
		return v
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
