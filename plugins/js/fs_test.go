package js

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"testing"
)

func (h *memHost) ReadFile(p string) ([]byte, error) {
	if b, ok := h.files[p]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("open %s: %w", p, fs.ErrNotExist)
}

func (h *memHost) WriteFile(p string, data []byte) error { h.files[p] = data; return nil }

func (h *memHost) ReadDir(dir string) ([]DirEntry, error) {
	var out []DirEntry
	for p := range h.files {
		if name, ok := strings.CutPrefix(p, dir+"/"); ok {
			out = append(out, DirEntry{Name: name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func TestFSReadsAndWritesTextAndBytesThroughTheHost(t *testing.T) {
	e := load(t, prelude+`const { fs } = require("agenthost");
tool({name: "copy", handler() {
  fs.writeFile("/data/t.txt", "héllo");
  const b = fs.readFileBytes("/data/t.txt");
  fs.writeFile("/data/b.bin", new Uint8Array([b.length, 0, 255]));
  fs.writeFile("/data/c.bin", new Uint8Array([7, 8]).buffer);
  return {text: fs.readFile("/data/t.txt"), bytes: Array.from(fs.readFileBytes("/data/b.bin")),
    bad: fs.readFile("/data/bad"), list: fs.readdir("/data").map((d) => d.name)};
}});
tool({name: "number", handler() { fs.writeFile("/data/n", 5); }});
tool({name: "missing", handler() { return fs.readFile("/data/none"); }});`)
	h := &memHost{files: map[string][]byte{"/data/bad": []byte("a\xffb")}}
	r := call(e, h, "copy", `{}`)
	want := `{"text":"héllo","bytes":[6,0,255],"bad":"a` + "\uFFFD" + `b","list":["b.bin","bad","c.bin","t.txt"]}`
	if r.IsError || text(r) != want {
		t.Fatalf("copy = %s, want %s", text(r), want)
	}
	if string(h.files["/data/c.bin"]) != "\x07\x08" {
		t.Errorf("ArrayBuffer written as %q", h.files["/data/c.bin"])
	}
	if r := call(e, h, "number", `{}`); !r.IsError || !strings.Contains(text(r), "TypeError: fs.writeFile: data must be a string, a Uint8Array or an ArrayBuffer") {
		t.Errorf("number = %s", text(r))
	}
	if r := call(e, h, "missing", `{}`); !r.IsError || !strings.Contains(text(r), "fs.readFile: open /data/none: file does not exist") {
		t.Errorf("missing = %s", text(r))
	}
	if _, err := Load("t.js", prelude+`require("agenthost").fs.readFile("/x"); tool({name: "x", handler() {}});`); err == nil ||
		!strings.Contains(err.Error(), "fs.readFile: host functions are available in handlers only") {
		t.Errorf("fs while loading: %v", err)
	}
}
