package sandbox

import "fmt"

// An Extism "std" command module is a Go program built as a WASI command
// (GOOS=wasip1, no -buildmode=c-shared) that imports the Extism kernel: its main reads
// the call's input with the PDK and writes its output, and `_start` is its only entry
// (the extism go-sdk's own std_command.wasm is one). Extism calls `_start` like any
// export, but a Go command runs main once and exits, so an instance serves one call:
// such a plugin always has isolation "call", whatever the manifest says (a pooled or
// session instance would be a dead one). Its tools are exports named `_start`; with no
// tool declared it has one, named after the plugin, whose input is the arguments JSON.

// stdCommandExport is the entry of a command module.
const stdCommandExport = "_start"

// isStdCommand says whether a module of the extism ABI is an Extism std command.
func isStdCommand(info moduleInfo) bool {
	return info.goBuilt && info.extism && info.exportSet()[stdCommandExport]
}

// stdCommandDecls are the tools of a std command: the declared ones, each of which
// must use the `_start` export (a Go command's other exports trap before main has
// run), or one tool named after the plugin.
func stdCommandDecls(plugin string, decls []ToolDecl) ([]ToolDecl, error) {
	if len(decls) == 0 {
		return []ToolDecl{{Name: plugin, Export: stdCommandExport}}, nil
	}
	out := make([]ToolDecl, len(decls))
	for i, d := range decls {
		if d.Export == "" {
			d.Export = stdCommandExport
		}
		if d.Export != stdCommandExport {
			return nil, fmt.Errorf("tool %q: this Go module is an Extism command (its entry is _start), so its export %q "+
				"cannot be called before main has run: declare the tool with export = \"_start\" (main reads the input), "+
				"or build the module with -buildmode=c-shared to call its exports", d.Name, d.Export)
		}
		out[i] = d
	}
	return out, nil
}
