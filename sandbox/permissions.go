package sandbox

import (
	"fmt"
	"time"
)

// Defaults applied to a zero Permissions field. Every limit is always on: a
// plugin cannot opt out of a timeout or a memory ceiling, it can only be given
// a larger one.
const (
	DefaultMemory    = 64 << 20
	DefaultTimeout   = 5 * time.Second
	DefaultMaxInput  = 1 << 20
	DefaultMaxOutput = 1 << 20
)

// Permissions is what one plugin may use. The zero value denies everything
// that is not a resource limit and applies the default limits.
type Permissions struct {
	// Memory is the ceiling, in bytes, of each linear memory of an instance
	// (rounded down to 64 KiB pages). 0 means DefaultMemory.
	Memory uint64
	// Timeout bounds every call, wall clock. 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxInput and MaxOutput bound the bytes passed in and out of one call
	// (for the wasi ABI: stdin and stdout). 0 means the defaults.
	MaxInput, MaxOutput int64
	// AllowedHosts are globs ("api.example.com", "*.example.com",
	// "127.0.0.1:8080") matched against every connection the plugin's HTTP
	// requests make, redirects included. A pattern with a port matches
	// "host:port"; one without matches the host on any port.
	AllowedHosts []string
	// AllowedPaths maps a host directory to a guest path. A host key prefixed
	// with "ro:" is mounted read-only. Nothing outside a mount is reachable,
	// neither by ".." nor by a symlink.
	AllowedPaths map[string]string
	// Env names the host environment variables passed through; their values
	// are read at load time. Nothing else of the host environment is visible.
	Env []string
	// Config is the key/value configuration the plugin reads with config_get.
	Config map[string]string
	// Model lets the plugin call create_message (the host model).
	Model bool
	// KV lets the plugin use kv_get, kv_set and kv_delete.
	KV bool
	// Isolation says which calls may share an instance: IsolationPooled,
	// IsolationSession or IsolationCall. "" means DefaultIsolation. A wasi
	// command is a fresh instance per call whatever this says.
	Isolation string
}

func (p Permissions) withDefaults() Permissions {
	if p.Memory == 0 {
		p.Memory = DefaultMemory
	}
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeout
	}
	if p.MaxInput <= 0 {
		p.MaxInput = DefaultMaxInput
	}
	if p.MaxOutput <= 0 {
		p.MaxOutput = DefaultMaxOutput
	}
	if p.Isolation == "" {
		p.Isolation = DefaultIsolation
	}
	return p
}

func (p Permissions) validate() error {
	if p.Memory < pageSize {
		return fmt.Errorf("memory %s is below one 64 KiB page", formatSize(int64(p.Memory)))
	}
	if p.Memory > 4<<30 {
		return fmt.Errorf("memory %s exceeds the 4 GiB a 32-bit Wasm memory can address", formatSize(int64(p.Memory)))
	}
	if err := validIsolation(p.Isolation); err != nil {
		return err
	}
	for _, h := range p.AllowedHosts {
		if _, err := compileHostGlob(h); err != nil {
			return fmt.Errorf("allowed_hosts %q: %w", h, err)
		}
	}
	return nil
}

const pageSize = 65536

// memoryPages is the per-memory ceiling in Wasm pages.
func (p Permissions) memoryPages() uint32 { return uint32(p.Memory / pageSize) }

// formatSize renders byte counts the way limits are written in agent.toml, so
// an error message can be matched against the manifest: "32 MiB", "512 KiB".
func formatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
