package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// MaxModuleSize bounds a module file read from Config.Path: a plugin is
// compiled in memory, so a path naming an endless or huge file must not be
// read to the end.
const MaxModuleSize = 256 << 20

// A sha256 pin (Config.SHA256) protects what is compiled only if it is
// checked on the very bytes compiled. Checking the file and later reading it
// again leaves a gap in which a rename, a symlink swap or a FIFO can hand
// the compiler other bytes. So Load reads the file once (readModule), hashes
// what it read and compiles that; a caller that checks a pin early, for a
// better error, uses VerifyModule, which reads the same way, and that check
// guards nothing by itself.

// readModule reads a module file once. Only a regular file is read: a FIFO
// or device could block or never end; the open is non-blocking so that even
// a FIFO without a writer is refused at once, and the kind is checked on the
// descriptor opened, not on the name.
func readModule(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fileKind(fi.Mode()))
	}
	if fi.Size() > MaxModuleSize {
		return nil, fmt.Errorf("%s is %s, more than a module may be (%s)", path, formatSize(fi.Size()), formatSize(MaxModuleSize))
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxModuleSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxModuleSize { // it grew while read
		return nil, fmt.Errorf("%s is more than a module may be (%s)", path, formatSize(MaxModuleSize))
	}
	return b, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}

// checkDigest compares wasm's sha256 with a pin (hex, any case).
func checkDigest(wasm []byte, pin, source string) error {
	sum := sha256.Sum256(wasm)
	if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, pin) {
		return fmt.Errorf("digest mismatch for %s: sha256 pins %s, the module read is %s", source, pin, got)
	}
	return nil
}

// VerifyModule reads a module file as Load does and checks it against a
// sha256 pin. It is for an early, clearer error (the manifest's line); Load
// checks the pin again on the bytes it compiles.
func VerifyModule(path, pin string) error {
	b, err := readModule(path)
	if err != nil {
		return fmt.Errorf("cannot read %s to check its digest: %w", path, err)
	}
	return checkDigest(b, pin, path)
}
