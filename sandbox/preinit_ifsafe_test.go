package sandbox

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// seedWriter is seedReactor whose _initialize also writes (nothing) to
// stdout: output is a host call a snapshot may not freeze.
var seedWriter = strings.NewReplacer(
	`(memory (export "memory") 1)`,
	`(import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)`,
	`(drop (call $random_get (i32.const 1024) (i32.const 8)))`,
	`(drop (call $random_get (i32.const 1024) (i32.const 8)))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 2048)))`,
).Replace(seedReactor)

// With PreinitIfSafe a module that passes every check is pre-initialised
// (every instance starts from the one snapshot), and one that does not is
// served as built, loads and works (each instance runs its own _initialize),
// with the reason PreinitOn would have refused it for.
func TestPreinitIfSafePreinitialisesWhatItCanAndServesTheRestAsBuilt(t *testing.T) {
	perms := Permissions{Isolation: IsolationCall}
	r := newTestRuntime(t)
	safe := load(t, r, Config{Name: "seed", Wasm: wat(t, seedReactor), Permissions: perms, Preinit: PreinitIfSafe})
	if ok, why := safe.Preinitialised(); !ok {
		t.Fatalf("a safe module was not pre-initialised: %s", why)
	}
	if a, b := seed(t, safe), seed(t, safe); !bytes.Equal(a, b) || a[8] != 1 {
		t.Fatalf("pre-initialised: seeds %x and %x, want equal, initialised once", a, b)
	}

	wasm := wat(t, seedWriter)
	_, onErr := r.Load(context.Background(), Config{Name: "writer", Wasm: wasm, Permissions: perms, Preinit: PreinitOn})
	const want = "pre-initialisation refused: _initialize called wasi_snapshot_preview1.fd_write;"
	if onErr == nil || !strings.Contains(onErr.Error(), want) {
		t.Fatalf("PreinitOn: Load = %v, want a refusal containing %q", onErr, want)
	}
	for range 2 { // the second Load finds the refusal kept by the Runtime
		built := load(t, r, Config{Name: "writer", Wasm: wasm, Permissions: perms, Preinit: PreinitIfSafe})
		if ok, why := built.Preinitialised(); ok || !strings.HasSuffix(onErr.Error(), why) {
			t.Fatalf("PreinitIfSafe: Preinitialised() = %v, %q; want false and the refusal %q", ok, why, onErr)
		}
		if a, b := seed(t, built), seed(t, built); bytes.Equal(a[:8], b[:8]) || a[8] != 1 || b[8] != 1 {
			t.Fatalf("as built: seeds %x and %x, want different, each initialised once", a, b)
		}
	}
}

// The other ways PreinitIfSafe serves a module as built: a wasi command, an
// _initialize too slow for the plugin's timeout (not kept: a quieter moment
// may do), and the mode off; each says why.
func TestPreinitIfSafeSaysWhyAModuleIsServedAsBuilt(t *testing.T) {
	spin := wat(t, `(module (memory 1) (func (export "_initialize") (loop $l (br $l))))`)
	for _, c := range []struct {
		name string
		cfg  Config
		why  string
	}{
		{"wasi command", Config{Wasm: fixtures.wasicmd, Preinit: PreinitIfSafe}, "preinit is for reactors (abi mcp or extism)"},
		{"slow _initialize", Config{Wasm: spin, ABI: ABIExtism, Preinit: PreinitIfSafe, Permissions: Permissions{Timeout: 100_000_000}},
			"pre-initialisation: _initialize did not finish within the timeout 100ms"},
		{"off", Config{Wasm: wat(t, seedReactor)}, "pre-initialisation is off"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Name = "m"
			p := load(t, newTestRuntime(t), c.cfg)
			if ok, why := p.Preinitialised(); ok || !strings.Contains(why, c.why) {
				t.Fatalf("Preinitialised() = %v, %q; want false and %q", ok, why, c.why)
			}
		})
	}
}

// A Load whose context ends while _initialize runs is an error in every
// mode, never a module served as built in its place.
func TestPreinitIfSafeCancelledLoadIsAnError(t *testing.T) {
	spin := wat(t, `(module (memory 1) (func (export "_initialize") (loop $l (br $l))))`)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	p, err := newTestRuntime(t).Load(ctx, Config{Name: "spin", Wasm: spin, ABI: ABIExtism, Preinit: PreinitIfSafe})
	if err == nil {
		ok, why := p.Preinitialised()
		t.Fatalf("a Load whose context ended succeeded (pre-initialised %v, %q)", ok, why)
	}
}
