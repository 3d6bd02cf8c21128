package host

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/jsbundle"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/sandbox"
)

// JSRuntimeEnv names a JavaScript runtime plugin to use instead of the one beside the
// agenthost executable (a manifest's wasm, for one plugin, comes first).
const JSRuntimeEnv = "AGENTHOST_JS_RUNTIME"

// jsRuntimeFile is the runtime plugin's name beside agenthost (`make plugins` puts it
// in bin/).
const jsRuntimeFile = "jsruntime.wasm"

// configureJS makes cfg the JavaScript plugin p describes: the runtime plugin, always
// pre-initialised (its _initialize calls no host function, whatever the bundle), with
// p's source bundled now into its config. Bundling at each load means an edited source
// is what runs after a reload; the runtime module, the same for every bundle, stays
// compiled and snapshotted in the cache (docs/javascript.md).
func configureJS(cfg *sandbox.Config, p manifest.PluginConfig) error {
	if p.JS == "" {
		return nil
	}
	b, err := jsbundle.Build(p.JS)
	if err != nil {
		return err
	}
	if cfg.Permissions.Config, err = b.Config(p.Permissions.Config); err != nil {
		return err
	}
	if cfg.Path, err = jsRuntime(p.Wasm); err != nil {
		return err
	}
	cfg.ABI, cfg.Preinit = sandbox.ABIMCP, sandbox.PreinitOn
	return nil
}

// jsRuntime finds the runtime plugin: the manifest's wasm, else $AGENTHOST_JS_RUNTIME,
// else jsruntime.wasm beside the running executable.
func jsRuntime(wasm string) (string, error) {
	if path := cmp.Or(wasm, os.Getenv(JSRuntimeEnv)); path != "" {
		return path, nil
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Errorf("find the JavaScript runtime plugin: %w", err)
	}
	path := filepath.Join(filepath.Dir(exe), jsRuntimeFile)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("the JavaScript runtime plugin %s is missing (`make plugins` builds it into bin/); or set %s, or the plugin's wasm, to its path", path, JSRuntimeEnv)
	}
	return path, nil
}

// pluginFile is the file whose change reloads plugin p: its JavaScript entry, or its module.
func pluginFile(p manifest.PluginConfig) string { return cmp.Or(p.JS, p.Wasm) }
