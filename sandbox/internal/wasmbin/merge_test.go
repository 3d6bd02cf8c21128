package wasmbin

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// memoryAfterInstantiation instantiates module without running its start
// functions (so only the data segments have written to the memory) and
// returns its memory, or the instantiation error.
func memoryAfterInstantiation(t *testing.T, module []byte) ([]byte, error) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	mod, err := rt.InstantiateWithConfig(ctx, module, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		return nil, err
	}
	mem, _ := mod.Memory().Read(0, mod.Memory().Size())
	return bytes.Clone(mem), nil
}

// seg is a data segment for module: flags 0 (active, memory 0) at an
// i32.const offset unless raw is set, which is the segment's encoding.
type seg struct {
	offset int32
	data   string
	raw    []byte
}

// module assembles a module with one page of memory and the segments,
// with a data count section first if dataCount.
func module(dataCount bool, segs ...seg) []byte {
	section := func(id byte, content []byte) []byte {
		return append(appendU32([]byte{id}, uint32(len(content))), content...)
	}
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, section(5, []byte{1, 0, 1})...) // one memory, min 1 page
	if dataCount {
		b = append(b, section(sectionDataCount, appendU32(nil, uint32(len(segs))))...)
	}
	content := appendU32(nil, uint32(len(segs)))
	for _, s := range segs {
		if s.raw != nil {
			content = append(content, s.raw...)
			continue
		}
		content = append(content, 0, opI32Const)
		content = appendS32(content, s.offset)
		content = append(content, opEnd)
		content = appendU32(content, uint32(len(s.data)))
		content = append(content, s.data...)
	}
	return append(b, section(sectionData, content)...)
}

func TestMergedModuleHasTheSameInitialMemory(t *testing.T) {
	for name, m := range map[string][]byte{
		"ascending": module(false, seg{offset: 0, data: "ab"}, seg{offset: 5, data: "cd"}, seg{offset: 9, data: "e"}),
		// C and D follow each other in the section but A lies between them
		// in memory: merging them would write zeros over A.
		"a segment in the gap": module(false, seg{offset: 20, data: "AAAA"}, seg{offset: 0, data: "BB"},
			seg{offset: 30, data: "CC"}, seg{offset: 2, data: "DD"}, seg{offset: 8, data: "EE"}),
		"negative offset": module(false, seg{offset: 0, data: "x"}, seg{offset: 2, data: "y"}, seg{offset: -1, data: "z"}),
	} {
		t.Run(name, func(t *testing.T) {
			out, before, after := MergeData(m, 256)
			want, werr := memoryAfterInstantiation(t, m)
			got, gerr := memoryAfterInstantiation(t, out)
			if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("merged %d→%d segments: memory or outcome differs (errors %v / %v)", before, after, werr, gerr)
			}
		})
	}
	// and the merges happened where they could
	if _, before, after := MergeData(module(false, seg{offset: 0, data: "ab"}, seg{offset: 5, data: "cd"}, seg{offset: 9, data: "e"}), 256); before != 3 || after != 1 {
		t.Fatalf("ascending: %d→%d segments, want 3→1", before, after)
	}
	out, _, after := MergeData(module(false, seg{offset: 20, data: "AAAA"}, seg{offset: 0, data: "BB"},
		seg{offset: 30, data: "CC"}, seg{offset: 2, data: "DD"}, seg{offset: 8, data: "EE"}), 256)
	if after != 4 { // D and E follow each other in the section and in memory; no other pair does
		t.Fatalf("a segment in the gap: %d segments after, want 4 (D and E merged)\n%x", after, out)
	}
}

func TestModulesMergeCannotProveSafeAreLeftAlone(t *testing.T) {
	for name, m := range map[string][]byte{
		"overlapping":       module(false, seg{offset: 0, data: "abcd"}, seg{offset: 2, data: "XY"}),
		"data count":        module(true, seg{offset: 0, data: "ab"}, seg{offset: 4, data: "cd"}),
		"passive segment":   module(false, seg{offset: 0, data: "ab"}, seg{raw: []byte{1, 2, 'c', 'd'}}),
		"global.get offset": module(false, seg{offset: 0, data: "ab"}, seg{raw: []byte{0, 0x23, 0, opEnd, 1, 'c'}}),
		"overlong offset":   module(false, seg{offset: 0, data: "ab"}, seg{raw: []byte{0, opI32Const, 0x84, 0x80, 0x80, 0x80, 0x80, 0x00, opEnd, 1, 'c'}}),
		"truncated": func() []byte {
			m := module(false, seg{offset: 0, data: "ab"}, seg{offset: 4, data: "cd"})
			return m[:len(m)-1]
		}(),
		"not wasm":  []byte("hello, world"),
		"far apart": module(false, seg{offset: 0, data: "a"}, seg{offset: 200, data: "b"}),
		"too many segments": func() []byte {
			segs := make([]seg, maxSegments+1)
			for i := range segs {
				segs[i] = seg{offset: int32(i), data: "x"}
			}
			return module(false, segs...)
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			out, _, _ := MergeData(m, 256)
			if &out[0] != &m[0] || len(out) != len(m) {
				t.Fatalf("rewritten:\n%x\n%x", m, out)
			}
		})
	}
}

// A Go program is what this is for: tens of thousands of segments, and
// the program must run exactly as before.
func TestGoProgramRunsTheSameFromFewSegments(t *testing.T) {
	dir := t.TempDir()
	src := `package main

import ("fmt"; "sort"; "strings")

var table = map[string]int{"alpha": 1, "beta": 2, "gamma": 3, "delta": 4}

func main() {
	keys := make([]string, 0, len(table))
	for k := range table { keys = append(keys, k) }
	sort.Strings(keys)
	fmt.Println(strings.Join(keys, ","), fmt.Sprintf("%08.3f %q %v", 3.14159, "μ", []int{1, 2}))
}
`
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module prog\n\ngo 1.24\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644)
	cmd := exec.Command("go", "build", "-o", "prog.wasm", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	m, err := os.ReadFile(filepath.Join(dir, "prog.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	out, before, after := MergeData(m, 256)
	if before < 1000 || after > 100 {
		t.Fatalf("%d→%d segments; want a Go program's thousands down to a few", before, after)
	}
	want, err := memoryAfterInstantiation(t, m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := memoryAfterInstantiation(t, out)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("initial memory differs (%v)", err)
	}
	run := func(module []byte) string {
		ctx := context.Background()
		rt := wazero.NewRuntime(ctx)
		defer rt.Close(ctx)
		wasi_snapshot_preview1.MustInstantiate(ctx, rt)
		var stdout bytes.Buffer
		if _, err := rt.InstantiateWithConfig(ctx, module, wazero.NewModuleConfig().WithStdout(&stdout)); err != nil {
			t.Fatal(err)
		}
		return stdout.String()
	}
	if a, b := run(m), run(out); a != b || a != "alpha,beta,delta,gamma 0003.142 \"μ\" [1 2]\n" {
		t.Fatalf("output %q, merged %q", a, b)
	}
}

// FuzzMergeData: whatever the bytes, MergeData returns, and a module it rewrites
// instantiates exactly as the original does.
func FuzzMergeData(f *testing.F) {
	f.Add(module(false, seg{offset: 0, data: "ab"}, seg{offset: 5, data: "cd"}))
	f.Add(module(false, seg{offset: 20, data: "AAAA"}, seg{offset: 0, data: "BB"}, seg{offset: 30, data: "CC"}))
	f.Add(module(false, seg{offset: 65530, data: "abcdefgh"}, seg{offset: 65539, data: "z"}))
	f.Fuzz(func(t *testing.T, m []byte) {
		out, _, _ := MergeData(m, 16)
		if len(out) == len(m) && (len(m) == 0 || &out[0] == &m[0]) {
			return
		}
		want, werr := memoryAfterInstantiation(t, m)
		got, gerr := memoryAfterInstantiation(t, out)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("rewritten module differs: %v / %v", werr, gerr)
		}
	})
}
