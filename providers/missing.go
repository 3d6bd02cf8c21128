package providers

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// modulePath is this module's path: an adapter of ours missing from a checkout of it is
// built by `make build`; anywhere else by `go install` from the module proxy.
const modulePath = "github.com/agenthost/agenthost"

// adapterPrefix starts the name of every adapter this module builds (cmd/NAME).
const adapterPrefix = "agenthost-provider-"

// missingAdapter says, before anything is started, that an adapter is not there: a
// command with a slash that names no file, or a bare name that is neither beside the
// host nor on PATH. Without it the user gets the confinement's or exec's ENOENT from
// inside the handshake, which does not say what to do. It returns nil when the file
// exists (any other problem is the start's to report).
func missingAdapter(command string, lookup *exec.Cmd) error {
	path := lookup.Path
	if lookup.Err != nil {
		if !errors.Is(lookup.Err, exec.ErrNotFound) {
			return nil
		}
	} else if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	msg := fmt.Sprintf("adapter %s does not exist", path)
	if !strings.ContainsRune(command, '/') {
		msg = fmt.Sprintf("adapter %s is neither beside agenthost nor on PATH", command)
	}
	if hint := buildHint(command, path); hint != "" {
		msg += "; build it with: " + hint
	}
	return errors.New(msg)
}

// buildHint is the one command that builds a missing adapter of this module: in a
// checkout (a directory above the adapter's holds our go.mod) `make build` there,
// elsewhere `go install` of its cmd package. Another program's adapter gets none.
func buildHint(command, path string) string {
	name := filepath.Base(command)
	if !strings.HasPrefix(name, adapterPrefix) || len(name) == len(adapterPrefix) {
		return ""
	}
	if strings.ContainsRune(command, '/') {
		if root := checkoutOf(filepath.Dir(path)); root != "" {
			if wd, err := os.Getwd(); err == nil && wd == root {
				return "make build"
			}
			return "make -C " + root + " build"
		}
	}
	return "go install " + modulePath + "/cmd/" + name + "@latest"
}

// checkoutOf returns the nearest directory at or above dir whose go.mod declares this
// module, or "".
func checkoutOf(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		if declaresModule(filepath.Join(dir, "go.mod")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func declaresModule(goMod string) bool {
	f, err := os.Open(goMod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return fields[1] == modulePath
		}
	}
	return false
}
