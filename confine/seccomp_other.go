//go:build !(linux && (amd64 || arm64))

package confine

import "errors"

func seccompAvailable() bool { return false }

func installNoNet() error { return errors.New("seccomp: not on this platform") }
