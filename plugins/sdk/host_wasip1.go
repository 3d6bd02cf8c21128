//go:build wasip1

package sdk

import (
	"fmt"

	pdk "github.com/extism/go-pdk"
)

//go:wasmimport extism:host/user kv_get
func kvGet(key uint64) uint64

//go:wasmimport extism:host/user kv_set
func kvSet(key, value uint64)

//go:wasmimport extism:host/user kv_delete
func kvDelete(key uint64)

//go:wasmimport extism:host/user create_message
func createMessage(req uint64) uint64

//go:wasmimport extism:host/user notify_progress
func notifyProgress(params uint64)

//go:wasmimport extism:host/user notify_logging_message
func notifyLoggingMessage(params uint64)

//go:wasmimport extism:host/user stream_result
func streamResult(text uint64)

//go:wasmimport extism:host/user create_elicitation
func createElicitation(req uint64) uint64

// Serve runs one export: it reads the call's input, runs handle, and sets
// the output (returns 0) or the error (returns 1). Export packages use it:
//
//	//go:wasmexport describe
//	func describe() int32 { return sdk.Serve(sdk.HandleDescribe) }
func Serve(handle func(input []byte) ([]byte, error)) int32 {
	out, err := handle(pdk.Input())
	if err != nil {
		pdk.SetError(err)
		return 1
	}
	pdk.Output(out)
	return 0
}

// block copies b into a fresh Extism memory block; 0 stands for empty.
func block(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	mem := pdk.AllocateBytes(b)
	return mem.Offset()
}

// readBlock reads (and frees) the block the host returned.
func readBlock(offs uint64) []byte {
	if offs == 0 {
		return nil
	}
	mem := pdk.FindMemory(offs)
	b := mem.ReadBytes()
	mem.Free()
	return b
}

// KVGet reads the plugin's KV store (needs the kv permission); ok is false
// for an absent key (an empty value reads as absent too).
func KVGet(key string) (val []byte, ok bool, err error) {
	b := readBlock(kvGet(block([]byte(key))))
	return b, b != nil, nil
}

// KVSet writes a key of the plugin's KV store (needs the kv permission).
func KVSet(key string, val []byte) error {
	kvSet(block([]byte(key)), block(val))
	return nil
}

// KVDelete removes a key of the plugin's KV store (needs the kv permission).
func KVDelete(key string) error {
	kvDelete(block([]byte(key)))
	return nil
}

// Config reads a value the manifest's permissions.config grants.
func Config(key string) (string, bool) { return pdk.GetConfig(key) }

// HTTPGet fetches a URL through the host (the host must be in
// allowed_hosts; a refusal ends the call). It returns status and body.
func HTTPGet(url string) (int, []byte, error) {
	res := pdk.NewHTTPRequest(pdk.MethodGet, url).Send()
	return int(res.Status()), res.Body(), nil
}

func hostCreateMessage(req []byte) ([]byte, error) {
	out := readBlock(createMessage(block(req)))
	if out == nil {
		return nil, fmt.Errorf("create_message: empty answer")
	}
	return out, nil
}

func hostElicit(req []byte) ([]byte, error) {
	out := readBlock(createElicitation(block(req)))
	if out == nil {
		return nil, fmt.Errorf("create_elicitation: empty answer")
	}
	return out, nil
}

func hostNotify(fn string, params []byte) error {
	switch fn {
	case "notify_progress":
		notifyProgress(block(params))
	default:
		notifyLoggingMessage(block(params))
	}
	return nil
}

func hostStreamResult(text []byte) error {
	streamResult(block(text))
	return nil
}
