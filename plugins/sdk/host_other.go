//go:build !wasip1

package sdk

// Stubs of the host functions outside Wasm: they fail with ErrNotInWasm, so
// a plugin's pure logic can still be compiled and tested natively.

func KVGet(string) ([]byte, bool, error)       { return nil, false, ErrNotInWasm }
func KVSet(string, []byte) error               { return ErrNotInWasm }
func KVDelete(string) error                    { return ErrNotInWasm }
func Config(string) (string, bool)             { return "", false }
func HTTPGet(string) (int, []byte, error)      { return 0, nil, ErrNotInWasm }
func hostCreateMessage([]byte) ([]byte, error) { return nil, ErrNotInWasm }
func hostNotify(string, []byte) error          { return ErrNotInWasm }
func hostElicit([]byte) ([]byte, error)        { return nil, ErrNotInWasm }
func hostStreamResult([]byte) error            { return ErrNotInWasm }
