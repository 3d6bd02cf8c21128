package host

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/eval"
)

// Grade asks an evaluator plugin's grade export to grade an eval case's run
// (`agenthost eval`, eval). It runs in the plugin's sandbox like every hook call.
func (h *Host) Grade(ctx context.Context, plugin string, in eval.GradeInput) (eval.Grade, error) {
	for i, p := range h.Plugins() {
		if p.Name() != plugin {
			continue
		}
		if kind := h.Manifest.Plugins[i].Kind; kind != "evaluator" {
			return eval.Grade{}, fmt.Errorf("plugin %q is a %s plugin, not an evaluator", plugin, kind)
		}
		if !hasExport(p, "grade") {
			return eval.Grade{}, fmt.Errorf("plugin %q has no grade export", plugin)
		}
		var out eval.Grade
		err := callHook(ctx, p, "grade", in, &out)
		return out, err
	}
	return eval.Grade{}, fmt.Errorf("no plugin %q in %s", plugin, h.Manifest.Path)
}
