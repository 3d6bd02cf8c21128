package wasmbin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tetratelabs/wazero"
)

// reactorWAT grows its memory in _initialize, writes to both pages, and
// sets globals of every number type; it exports them to be read.
const reactorWAT = `(module
  (memory (export "memory") 1 4)
  (global (export "i32") (mut i32) (i32.const 7))
  (global (export "i64") (mut i64) (i64.const 7))
  (global (export "f32") (mut f32) (f32.const 7))
  (global (export "f64") (mut f64) (f64.const 7))
  (global (export "const") i32 (i32.const 42))
  (table 2 funcref)
  (elem (i32.const 0) $f)
  (data (i32.const 16) "before")
  (func $f (result i32) (i32.const 1))
  (func (export "_initialize")
    (drop (memory.grow (i32.const 1)))
    (i32.store (i32.const 100) (i32.const 0x01020304))
    (i32.store8 (i32.const 16) (i32.const 0))
    (i64.store (i32.const 70000) (i64.const -1))
    (global.set 0 (i32.const -3))
    (global.set 1 (i64.const -9000000000))
    (global.set 2 (f32.const 1.5))
    (global.set 3 (f64.const -2.25)))
  (func (export "call_table") (result i32) (call_indirect (result i32) (i32.const 0))))`

func assemble(t testing.TB, src string) []byte {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "m.wat"), filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("wat2wasm", in, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// state instantiates module without start functions, calls init if set,
// and returns its memory and exported globals.
func state(t *testing.T, module []byte, init string) ([]byte, map[string]uint64) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mod, err := rt.InstantiateWithConfig(ctx, module, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	if init != "" {
		if _, err := mod.ExportedFunction(init).Call(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := mod.ExportedFunction("call_table").Call(ctx); err != nil || res[0] != 1 {
		t.Fatalf("table: %v %v", res, err)
	}
	mem, _ := mod.Memory().Read(0, mod.Memory().Size())
	globals := map[string]uint64{}
	for _, name := range []string{"i32", "i64", "f32", "f64", "const"} {
		globals[name] = mod.ExportedGlobal(name).Get()
	}
	for i := range 4 {
		if g := mod.ExportedGlobal(GlobalExportPrefix + strconv.Itoa(i)); g != nil {
			globals[strconv.Itoa(i)] = g.Get()
		}
	}
	return bytes.Clone(mem), globals
}

// A snapshot instantiates to exactly the memory and globals _initialize
// left, grown memory and every number type included, with its table and
// code unchanged, and no _initialize left to run.
func TestSnapshotStartsWhereInitializeEnded(t *testing.T) {
	m, err := ParseReactor(assemble(t, reactorWAT))
	if err != nil {
		t.Fatal(err)
	}
	mem, globals := state(t, m.Instrument(), InitExport)
	snap := Snapshot{Memory: mem, Globals: map[int]uint64{}, Clock: 123456789}
	for _, i := range m.MutableGlobals() {
		snap.Globals[i] = globals[strconv.Itoa(i)]
	}
	out, err := m.Snapshot(snap, 8)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "snap.wasm")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("wasm-validate", path).CombinedOutput(); err != nil {
		t.Fatalf("wasm-validate: %v\n%s", err, b)
	}
	gotMem, gotGlobals := state(t, out, "")
	if !bytes.Equal(gotMem, mem) || len(mem) != 2*65536 {
		t.Fatalf("memory differs (%d bytes, want %d)", len(gotMem), len(mem))
	}
	minus9e9 := int64(-9000000000)
	want := map[string]uint64{"i32": 0xfffffffd, "i64": uint64(minus9e9), "f32": 0x3fc00000, "f64": 0xc002000000000000, "const": 42}
	for name, v := range want {
		if globals[name] != v || gotGlobals[name] != v {
			t.Errorf("global %s = %#x after _initialize, %#x in the snapshot; want %#x", name, globals[name], gotGlobals[name], v)
		}
	}
	if bytes.Contains(out, []byte(InitExport)) {
		t.Error("the snapshot still names _initialize")
	}
	if c, ok := Clock(out); !ok || c != 123456789 {
		t.Errorf("Clock = %d %v", c, ok)
	}
	// A snapshot cut short or changed anywhere is not whole.
	for _, i := range []int{8, len(out) / 2, len(out) - 40, len(out) - 1} {
		bad := bytes.Clone(out)
		bad[i] ^= 1
		if _, ok := Clock(bad); ok {
			t.Errorf("byte %d flipped: still whole", i)
		}
	}
	if _, ok := Clock(out[:len(out)-1]); ok {
		t.Error("truncated: still whole")
	}
	if _, ok := Clock(assemble(t, reactorWAT)); ok {
		t.Error("a module that is no snapshot counts as one")
	}
}

func TestNonZeroRangesJoinShortGaps(t *testing.T) {
	mem := make([]byte, 64)
	copy(mem[2:], "ab")
	copy(mem[6:], "c")  // 2 zeros after "ab": joined with gap 2
	copy(mem[20:], "d") // 12 zeros: a new range
	mem[63] = 'e'
	var got []string
	for _, s := range nonZero(mem, 2) {
		got = append(got, fmt.Sprintf("%d:%q", s.offset, s.data))
	}
	if fmt.Sprint(got) != `[2:"ab\x00\x00c" 20:"d" 63:"e"]` {
		t.Fatalf("ranges %v", got)
	}
	if len(nonZero(make([]byte, 100), 8)) != 0 {
		t.Fatal("a zero memory has ranges")
	}
}

// FuzzParseReactor: any bytes give a reactor or an error, never a panic,
// and a reactor can be instrumented and snapshotted.
func FuzzParseReactor(f *testing.F) {
	f.Add(assemble(f, reactorWAT))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x05\x03\x01\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseReactor(b)
		if err != nil {
			return
		}
		m.Instrument()
		globals := map[int]uint64{}
		for _, i := range m.MutableGlobals() {
			globals[i] = 1
		}
		if _, err := m.Snapshot(Snapshot{Memory: make([]byte, 65536), Globals: globals}, 4); err != nil {
			t.Fatal(err)
		}
	})
}
