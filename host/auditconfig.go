package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/audit"
	"go.opentelemetry.io/otel/trace"
)

// ActionConfigLoad records the configuration a host runs with: the manifest's digest and
// each loaded plugin's, written when they differ from the last ones recorded, so the log
// says when the agent's code or policy changed (a new plugin build, an edited manifest, a
// hot reload) without a record per command.
const ActionConfigLoad = "config.load"

// configKey is where the last recorded configuration's digest is kept (the host's own
// key/value namespace, which no plugin can take).
const configPlugin, configKey = "agenthost/audit", "config"

// auditConfig records the configuration when it changed since it was last recorded.
func (h *Host) auditConfig(ctx context.Context, actor string) error {
	if _, ok := h.Store.(audit.Store); !ok {
		return nil
	}
	detail := map[string]string{}
	if b, err := os.ReadFile(h.Manifest.Path); err == nil {
		sum := sha256.Sum256(b)
		detail["manifest_sha256"] = hex.EncodeToString(sum[:])
	}
	for _, p := range h.plugins {
		detail["plugin:"+p.Name()] = p.Digest()
	}
	keys := make([]string, 0, len(detail))
	for k := range detail {
		keys = append(keys, k+"="+detail[k])
	}
	slices.Sort(keys)
	sum := sha256.Sum256([]byte(strings.Join(keys, "\n")))
	digest := hex.EncodeToString(sum[:])
	last, ok, err := h.Store.KVGet(ctx, configPlugin, configKey)
	if err != nil {
		return err
	}
	if ok && string(last) == digest {
		return nil
	}
	if err := h.Audit(ctx, audit.Record{Action: ActionConfigLoad, Actor: actor, Target: h.Manifest.Path, Detail: detail}); err != nil {
		return err
	}
	return h.Store.KVSet(ctx, configPlugin, configKey, []byte(digest))
}

// withTrace adds the trace id of ctx's span, when there is one, to a record's detail:
// an audit record then leads to the run's trace.
// The request id (audit.WithRequestID) is added the same way.
func withTrace(ctx context.Context, r *audit.Record) {
	set := func(k, v string) {
		if r.Detail == nil {
			r.Detail = map[string]string{}
		}
		r.Detail[k] = v
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		set("trace_id", sc.TraceID().String())
	}
	if id := audit.RequestID(ctx); id != "" {
		set("request_id", id)
	}
}
