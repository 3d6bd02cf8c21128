//go:build wasip1

package main

import "encoding/binary"

// A minimal stand-in for the Extism Go PDK, written against the kernel imports
// so the test plugin needs no module outside the standard library.

//go:wasmimport extism:host/env input_length
func extismInputLength() uint64

//go:wasmimport extism:host/env input_load_u8
func extismInputLoadU8(offs uint64) uint32

//go:wasmimport extism:host/env input_load_u64
func extismInputLoadU64(offs uint64) uint64

//go:wasmimport extism:host/env alloc
func extismAlloc(n uint64) uint64

//go:wasmimport extism:host/env length
func extismLength(offs uint64) uint64

//go:wasmimport extism:host/env load_u8
func extismLoadU8(offs uint64) uint32

//go:wasmimport extism:host/env load_u64
func extismLoadU64(offs uint64) uint64

//go:wasmimport extism:host/env store_u8
func extismStoreU8(offs uint64, v uint32)

//go:wasmimport extism:host/env store_u64
func extismStoreU64(offs uint64, v uint64)

//go:wasmimport extism:host/env output_set
func extismOutputSet(offs, n uint64)

//go:wasmimport extism:host/env error_set
func extismErrorSet(offs uint64)

//go:wasmimport extism:host/env http_request
func extismHTTPRequest(req, body uint64) uint64

//go:wasmimport extism:host/env http_status_code
func extismHTTPStatusCode() int32

//go:wasmimport extism:host/env config_get
func extismConfigGet(key uint64) uint64

func input() []byte {
	n := extismInputLength()
	buf := make([]byte, n)
	var i uint64
	for ; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], extismInputLoadU64(i))
	}
	for ; i < n; i++ {
		buf[i] = byte(extismInputLoadU8(i))
	}
	return buf
}

func store(b []byte) uint64 {
	offs := extismAlloc(uint64(len(b)))
	n := uint64(len(b))
	var i uint64
	for ; i+8 <= n; i += 8 {
		extismStoreU64(offs+i, binary.LittleEndian.Uint64(b[i:]))
	}
	for ; i < n; i++ {
		extismStoreU8(offs+i, uint32(b[i]))
	}
	return offs
}

func load(offs uint64) []byte {
	if offs == 0 {
		return nil
	}
	n := extismLength(offs)
	buf := make([]byte, n)
	var i uint64
	for ; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], extismLoadU64(offs+i))
	}
	for ; i < n; i++ {
		buf[i] = byte(extismLoadU8(offs + i))
	}
	return buf
}

func output(b []byte) int32 {
	extismOutputSet(store(b), uint64(len(b)))
	return 0
}

func fail(msg string) int32 {
	extismErrorSet(store([]byte(msg)))
	return 1
}
