package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// wat assembles a module with wat2wasm (features as its flags).
func wat(t testing.TB, src string, flags ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "m.wat"), filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("wat2wasm", append(flags, in, "-o", out)...).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// seedReactor is an Extism-ABI reactor whose _initialize reads 8 random
// bytes into its memory and counts its runs in a global; "seed" outputs
// the bytes and the count (as one more byte).
const seedReactor = `(module
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (global $runs (mut i32) (i32.const 0))
  (global $big (mut i64) (i64.const -5))
  (global $f (mut f64) (f64.const 0))
  (func (export "_initialize")
    (drop (call $random_get (i32.const 1024) (i32.const 8)))
    (global.set $runs (i32.add (global.get $runs) (i32.const 1)))
    (global.set $big (i64.const -1234567890123))
    (global.set $f (f64.const 2.5)))
  (func (export "seed") (result i32)
    (local $out i64) (local $i i32)
    (local.set $out (call $alloc (i64.const 11)))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $i) (i32.const 8)))
        (call $store_u8 (i64.add (local.get $out) (i64.extend_i32_u (local.get $i)))
          (i32.load8_u offset=1024 (local.get $i)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (call $store_u8 (i64.add (local.get $out) (i64.const 8)) (global.get $runs))
    (call $store_u8 (i64.add (local.get $out) (i64.const 9))
      (i64.eq (global.get $big) (i64.const -1234567890123)))
    (call $store_u8 (i64.add (local.get $out) (i64.const 10))
      (f64.eq (global.get $f) (f64.const 2.5)))
    (call $output_set (local.get $out) (i64.const 11))
    (i32.const 0)))`

func seed(t *testing.T, p *Plugin) []byte {
	t.Helper()
	out, err := p.CallExport(context.Background(), "seed", nil)
	if err != nil || len(out) != 11 {
		t.Fatalf("seed: %x %v", out, err)
	}
	return out
}

// With preinit, _initialize runs once, at Load: every fresh instance starts
// from its result (the same random bytes, its global counts one run), which
// is also the documented caveat that the random state is frozen. Without
// it, each instance runs _initialize itself and draws its own bytes.
func TestPreinitRunsInitializeOnceAndFreezesItsState(t *testing.T) {
	wasm := wat(t, seedReactor)
	perms := Permissions{Isolation: IsolationCall}
	built := load(t, newTestRuntime(t), Config{Name: "seed", Wasm: wasm, Permissions: perms})
	a, b := seed(t, built), seed(t, built)
	if bytes.Equal(a[:8], b[:8]) || a[8] != 1 || b[8] != 1 {
		t.Fatalf("without preinit: seeds %x and %x, want different, each initialised once", a, b)
	}
	pre := load(t, newTestRuntime(t), Config{Name: "seed", Wasm: wasm, Permissions: perms, Preinit: PreinitOn})
	a, b = seed(t, pre), seed(t, pre)
	if !bytes.Equal(a, b) || a[8] != 1 || a[9] != 1 || a[10] != 1 {
		t.Fatalf("with preinit: seeds %x and %x, want equal, initialised once, i64 and f64 globals kept", a, b)
	}
	if pre.Exports()[0] != "seed" || len(pre.Exports()) != 1 {
		t.Fatalf("exports %v, want [seed]", pre.Exports())
	}
}

// The snapshot is made once per module and kept: a second Load in the same
// Runtime, and a Load in a new Runtime on the same CacheDir (a restart),
// serve the same snapshot, while a new CacheDir makes a new one.
func TestPreinitSnapshotIsMadeOnceAndCached(t *testing.T) {
	wasm := wat(t, seedReactor)
	dir := t.TempDir()
	cfg := Config{Name: "seed", Wasm: wasm, Preinit: PreinitOn}
	rt := func(dir string) *Runtime {
		r, err := NewRuntime(context.Background(), RuntimeOptions{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(context.Background()) })
		return r
	}
	r := rt(dir)
	first := seed(t, load(t, r, cfg))
	if again := seed(t, load(t, r, cfg)); !bytes.Equal(again, first) {
		t.Fatalf("same runtime: %x, want %x", again, first)
	}
	if restarted := seed(t, load(t, rt(dir), cfg)); !bytes.Equal(restarted, first) {
		t.Fatalf("new runtime, same CacheDir: %x, want %x", restarted, first)
	}
	if other := seed(t, load(t, rt(t.TempDir()), cfg)); bytes.Equal(other, first) {
		t.Fatalf("another CacheDir served the same snapshot %x", other)
	}
	// A damaged file in the cache is made again, not compiled or refused.
	files, _ := filepath.Glob(filepath.Join(dir, "agenthost-preinit-*", "*.wasm"))
	if len(files) != 1 {
		t.Fatalf("cache holds %v, want one snapshot", files)
	}
	b, _ := os.ReadFile(files[0])
	b[len(b)/2] ^= 0xff
	os.WriteFile(files[0], b, 0o644)
	if remade := seed(t, load(t, rt(dir), cfg)); bytes.Equal(remade, first) {
		t.Fatalf("a damaged snapshot file was used as it was")
	}
	// Without a CacheDir the Runtime keeps it in memory.
	inMemory := rt("")
	if a, b := seed(t, load(t, inMemory, cfg)), seed(t, load(t, inMemory, cfg)); !bytes.Equal(a, b) {
		t.Fatalf("no CacheDir, same runtime: %x then %x", a, b)
	}
}

// Each shape pre-initialisation cannot prove safe is refused at Load, with
// what the module has.
func TestPreinitRefusesShapesItCannotProveSafe(t *testing.T) {
	const init = `(func (export "_initialize"))`
	for _, c := range []struct {
		name, src string
		flags     []string
		want      string
	}{
		{"imported memory", `(module (import "env" "mem" (memory 1)) ` + init + `)`, nil,
			"the module imports its memory (env.mem)"},
		{"imported global", `(module (import "env" "g" (global i32)) (memory 1) ` + init + `)`, nil,
			"the module imports a global (env.g)"},
		{"imported table", `(module (import "env" "t" (table 1 funcref)) (memory 1) ` + init + `)`, nil,
			"the module imports a table (env.t)"},
		{"two memories", `(module (memory 1) (memory 1) ` + init + `)`, []string{"--enable-multi-memory"},
			"the module defines 2 memories"},
		{"memory64", `(module (memory i64 1) ` + init + `)`, []string{"--enable-memory64"},
			"the module's memory is 64-bit (memory64)"},
		{"no memory", `(module ` + init + `)`, nil, "the module has no memory of its own"},
		{"start section", `(module (memory 1) (func $s) (start $s) ` + init + `)`, nil,
			"the module has a start function"},
		{"no _initialize", `(module (memory 1) (func (export "run") (result i32) (i32.const 0)))`, nil,
			"the module exports no _initialize"},
		{"_initialize with params", `(module (memory 1) (func (export "_initialize") (param i32)))`, nil,
			"the module's _initialize takes or returns values"},
		{"table.set", `(module (memory 1) (table 2 funcref) ` + init +
			` (func (export "f") (table.set 0 (i32.const 0) (ref.null func))))`, nil, "function 1 uses table.set"},
		{"table.grow", `(module (memory 1) (table 2 funcref) ` + init +
			` (func (export "f") (drop (table.grow 0 (ref.null func) (i32.const 1)))))`, nil, "function 1 uses table.grow"},
		{"exported table", `(module (memory 1) (table (export "t") 2 funcref) ` + init + `)`, nil,
			`the module exports a table ("t")`},
		{"passive data", `(module (memory 1) (data $d "x") ` + init +
			` (func (export "f") (memory.init $d (i32.const 0) (i32.const 0) (i32.const 1))))`, nil,
			"the module has passive data segments"},
		{"mutable funcref global", `(module (memory 1) (global (mut funcref) (ref.null func)) ` + init + `)`, nil,
			"the module has a mutable global of type 0x70"},
		{"SIMD", `(module (memory 1) ` + init + ` (func (export "f") (drop (v128.const i32x4 0 0 0 0))))`, nil,
			"SIMD instructions"},
		{"extism call in _initialize", `(module
			(import "extism:host/env" "config_get" (func $cfg (param i64) (result i64)))
			(memory 1) (func (export "_initialize") (drop (call $cfg (i64.const 0)))))`, nil,
			"_initialize called extism:host/env.config_get; it may call only the WASI functions"},
		{"output in _initialize", `(module
			(import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
			(memory 1) (func (export "_initialize") (drop (call $w (i32.const 1) (i32.const 0) (i32.const 0) (i32.const 8)))))`, nil,
			"_initialize called wasi_snapshot_preview1.fd_write;"},
		{"flags of a file in _initialize", `(module
			(import "wasi_snapshot_preview1" "fd_fdstat_set_flags" (func $f (param i32 i32) (result i32)))
			(memory 1) (func (export "_initialize") (drop (call $f (i32.const 3) (i32.const 4)))))`, nil,
			"_initialize called wasi_snapshot_preview1.fd_fdstat_set_flags(fd 3);"},
		{"constructors exported", `(module (memory 1) (func (export "__wasm_call_ctors")) ` + init + `)`, nil,
			"the module exports __wasm_call_ctors, which its host runs at every instance"},
		{"_initialize traps", `(module (memory 1) (func (export "_initialize") unreachable))`, nil,
			"pre-initialisation: _initialize failed: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := newTestRuntime(t).Load(context.Background(),
				Config{Name: "shape", Wasm: wat(t, c.src, c.flags...), ABI: ABIExtism, Preinit: PreinitOn})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Load = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// _initialize is bounded by the plugin's timeout, as any call is.
func TestPreinitInitializeThatNeverEndsTimesOut(t *testing.T) {
	src := `(module (memory 1) (func (export "_initialize") (loop $l (br $l))))`
	_, err := newTestRuntime(t).Load(context.Background(), Config{Name: "spin", Wasm: wat(t, src), ABI: ABIExtism,
		Preinit: PreinitOn, Permissions: Permissions{Timeout: 100_000_000}})
	if err == nil || !strings.Contains(err.Error(), "_initialize did not finish within the timeout 100ms") {
		t.Fatalf("Load = %v", err)
	}
}

// A truncated or corrupted module gives an error at Load, never a panic.
func TestPreinitCorruptModuleIsAnError(t *testing.T) {
	wasm := wat(t, seedReactor)
	r := newTestRuntime(t)
	for n := 0; n < len(wasm); n += 7 {
		if _, err := r.Load(context.Background(), Config{Name: "cut", Wasm: wasm[:n], ABI: ABIExtism, Preinit: PreinitOn}); err == nil {
			t.Fatalf("truncated to %d of %d bytes: loaded", n, len(wasm))
		}
	}
	for i := 8; i < len(wasm); i++ {
		bad := bytes.Clone(wasm)
		bad[i] ^= 0xff
		p, err := r.Load(context.Background(), Config{Name: "flip", Wasm: bad, ABI: ABIExtism, Preinit: PreinitOn})
		if err == nil {
			p.Close(context.Background())
		}
	}
}

// A wasi command runs _start at every call: preinit does not apply.
func TestPreinitRefusesWASICommand(t *testing.T) {
	_, err := newTestRuntime(t).Load(context.Background(), Config{Name: "cmd", Wasm: fixtures.wasicmd, Preinit: PreinitOn})
	if err == nil || !strings.Contains(err.Error(), "preinit is for reactors") {
		t.Fatalf("Load = %v", err)
	}
}
