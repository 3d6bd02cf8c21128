package sandbox

import (
	"context"
	"maps"
)

// Call config: values the host gives one call on top of the plugin's config (a user's
// own secrets: host/usersecrets.go). The call's instance reads them with config_get
// like any config value, for that call only: the instance's config is swapped in for
// the call and back after it, never written in place (instances share the compiled
// plugin's map).

type callConfigKey struct{}

// WithCallConfig returns ctx whose calls see cfg on top of the plugin's config.
func WithCallConfig(ctx context.Context, cfg map[string]string) context.Context {
	return context.WithValue(ctx, callConfigKey{}, cfg)
}

// withCallConfig sets in's config for the call on ctx and returns what restores it.
func (in *instance) withCallConfig(ctx context.Context) func() {
	extra, _ := ctx.Value(callConfigKey{}).(map[string]string)
	if len(extra) == 0 {
		return func() {}
	}
	orig := in.ext.Config
	merged := maps.Clone(orig)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, extra)
	in.ext.Config = merged
	return func() { in.ext.Config = orig }
}
