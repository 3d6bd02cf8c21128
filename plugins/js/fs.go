package js

import (
	"unicode/utf8"

	"github.com/dop251/goja"
)

// FS is the part of Host that fs in "agenthost" reaches: in the plugin, the
// guest's own file calls over its WASI preopens, so what a path may reach is
// the sandbox's allowed_paths, exactly as for a Go plugin.
type FS interface {
	ReadFile(path string) ([]byte, error)
	WriteFile(path string, data []byte) error
	ReadDir(path string) ([]DirEntry, error)
}

// DirEntry is one entry fs.readdir returns.
type DirEntry struct {
	Name        string `json:"name"`
	IsDirectory bool   `json:"isDirectory"`
}

// fsModule builds fs: readFile (text), readFileBytes (a Uint8Array),
// writeFile (a string or bytes) and readdir.
func (e *Engine) fsModule(set func(o *goja.Object, name string, v any)) *goja.Object {
	fs := e.vm.NewObject()
	set(fs, "readFile", func(path string) string {
		b, err := e.use("fs.readFile").ReadFile(path)
		e.check("fs.readFile", err)
		if !utf8.Valid(b) {
			b = []byte(string([]rune(string(b)))) // each bad byte becomes U+FFFD
		}
		return string(b)
	})
	set(fs, "readFileBytes", func(path string) goja.Value {
		b, err := e.use("fs.readFileBytes").ReadFile(path)
		e.check("fs.readFileBytes", err)
		return e.bytes(b)
	})
	set(fs, "writeFile", func(path string, data goja.Value) {
		h := e.use("fs.writeFile")
		e.check("fs.writeFile", h.WriteFile(path, e.data("fs.writeFile", data)))
	})
	set(fs, "readdir", func(path string) goja.Value {
		entries, err := e.use("fs.readdir").ReadDir(path)
		e.check("fs.readdir", err)
		if entries == nil {
			entries = []DirEntry{}
		}
		return e.vm.ToValue(entries)
	})
	return fs
}

// bytes is b as a new Uint8Array.
func (e *Engine) bytes(b []byte) goja.Value {
	ctor, _ := goja.AssertConstructor(e.vm.Get("Uint8Array"))
	arr, err := ctor(nil, e.vm.ToValue(e.vm.NewArrayBuffer(b)))
	e.check("Uint8Array", err)
	return arr
}

// data is a string's UTF-8, or the bytes of a Uint8Array or ArrayBuffer; any
// other value is a TypeError naming fn.
func (e *Engine) data(fn string, v goja.Value) []byte {
	if v != nil {
		switch x := v.Export().(type) {
		case string:
			return []byte(x)
		case []byte:
			return append([]byte(nil), x...)
		case goja.ArrayBuffer:
			return append([]byte(nil), x.Bytes()...)
		}
	}
	panic(e.vm.NewTypeError("%s: data must be a string, a Uint8Array or an ArrayBuffer", fn))
}
