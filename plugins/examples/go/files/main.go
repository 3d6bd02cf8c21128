//go:build wasip1

// Command files is an example tool plugin (mcp ABI) reading files through
// WASI: read_file and list_dir. It sees only the directories the manifest
// mounts with permissions.allowed_paths ("host" = "guest"); the sandbox
// refuses everything else, ".." and symlinks included.
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/mcptool"
)

func main() {}

type pathArgs struct {
	Path string `json:"path" description:"a guest path under a mounted directory, e.g. /data/notes.txt"`
}

const maxRead = 256 << 10

func init() {
	sdk.AddTool("read_file", "Read a text file (at most 256 KiB) under an allowed path.", func(a pathArgs) (sdk.CallToolResult, error) {
		info, err := os.Stat(a.Path)
		if err != nil {
			return sdk.ErrorText(fmt.Sprintf("read_file: %v", err)), nil
		}
		if info.IsDir() {
			return sdk.ErrorText(fmt.Sprintf("read_file: %s is a directory", a.Path)), nil
		}
		if info.Size() > maxRead {
			return sdk.ErrorText(fmt.Sprintf("read_file: %s has %d bytes, more than %d", a.Path, info.Size(), maxRead)), nil
		}
		b, err := os.ReadFile(a.Path)
		if err != nil {
			return sdk.ErrorText(fmt.Sprintf("read_file: %v", err)), nil
		}
		return sdk.Text(string(b)), nil
	})
	sdk.AddTool("list_dir", "List a directory under an allowed path: one entry per line, directories end with /.", func(a pathArgs) (sdk.CallToolResult, error) {
		entries, err := os.ReadDir(a.Path)
		if err != nil {
			return sdk.ErrorText(fmt.Sprintf("list_dir: %v", err)), nil
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() {
				name += "/"
			}
			names = append(names, name)
		}
		sort.Strings(names)
		return sdk.Text(strings.Join(names, "\n")), nil
	})
}
