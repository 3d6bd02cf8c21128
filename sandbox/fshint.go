package sandbox

import (
	"fmt"
	"sort"
	"strings"
)

// A guest that reaches for a path outside its mounts never reaches the host: its libc
// finds no preopened directory and fails on its own ("Bad file number" from Go, "No
// such file or directory" from C). The author then has no way to tell a typo from a
// missing grant, so an error result that reads like a file error gets a note saying
// what the plugin may reach: its allowed_paths, as the manifest writes them.
var fsErrorTexts = []string{
	"bad file number", "bad file descriptor", "no such file or directory", "operation not permitted",
	"capabilities insufficient", "permission denied", "read-only file system",
}

func (p *Plugin) withFSHint(res CallResult) CallResult {
	if !res.IsError || len(res.Content) == 0 {
		return res
	}
	last := &res.Content[len(res.Content)-1]
	if last.Type != "text" && last.Type != "" {
		return res
	}
	lower := strings.ToLower(res.Text())
	hit := false
	for _, s := range fsErrorTexts {
		if strings.Contains(lower, s) {
			hit = true
			break
		}
	}
	if !hit {
		return res
	}
	res.Content = append(res.Content[:len(res.Content)-1:len(res.Content)-1], *last)
	res.Content[len(res.Content)-1].Text += " " + p.fsNote()
	return res
}

// fsNote says which host directories the plugin sees, and where.
func (p *Plugin) fsNote() string {
	if len(p.perms.AllowedPaths) == 0 {
		return fmt.Sprintf("(plugin %q has no allowed_paths: it can reach no file)", p.name)
	}
	var mounts []string
	for host, guest := range p.perms.AllowedPaths {
		mode := "read-write"
		if strings.HasPrefix(host, "ro:") {
			host, mode = strings.TrimPrefix(host, "ro:"), "read-only"
		}
		mounts = append(mounts, fmt.Sprintf("%s at %s (%s)", host, guest, mode))
	}
	sort.Strings(mounts)
	return fmt.Sprintf("(plugin %q reaches only its allowed_paths: %s)", p.name, strings.Join(mounts, "; "))
}
