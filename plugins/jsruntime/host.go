//go:build wasip1

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	pdk "github.com/extism/go-pdk"

	"github.com/agenthost/agenthost/plugins/js"
	"github.com/agenthost/agenthost/plugins/sdk"
)

// sdkHost is js.Host on the SDK's host functions: every grant and refusal is
// the host's, as for a Go plugin.
type sdkHost struct{}

func (sdkHost) KVGet(key string) (string, bool, error) {
	v, ok, err := sdk.KVGet(key)
	return string(v), ok, err
}

func (sdkHost) KVSet(key, value string) error { return sdk.KVSet(key, []byte(value)) }
func (sdkHost) KVDelete(key string) error     { return sdk.KVDelete(key) }
func (sdkHost) Config(key string) (string, bool) {
	return sdk.Config(key)
}
func (sdkHost) Log(level, message string) error { return sdk.Log(level, message) }
func (sdkHost) Progress(p, total float64, message string) error {
	return sdk.Progress(p, total, message)
}

func (sdkHost) StreamResult(text string) error { return sdk.StreamResult(text) }

func (sdkHost) HTTP(r js.HTTPRequest) (js.HTTPResponse, error) {
	m, ok := method(r.Method)
	if !ok {
		return js.HTTPResponse{}, fmt.Errorf("method %q is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS", r.Method)
	}
	req := pdk.NewHTTPRequest(m, r.URL)
	for k, v := range r.Headers {
		req.SetHeader(k, v)
	}
	if r.Body != "" {
		req.SetBody([]byte(r.Body))
	}
	res := req.Send()
	return js.HTTPResponse{Status: int(res.Status()), Body: string(res.Body())}, nil
}

// method maps a method name onto go-pdk's.
func method(m string) (pdk.HTTPMethod, bool) {
	for _, have := range []pdk.HTTPMethod{pdk.MethodGet, pdk.MethodHead, pdk.MethodPost, pdk.MethodPut, pdk.MethodPatch, pdk.MethodDelete, pdk.MethodOptions} {
		if have.String() == strings.ToUpper(m) {
			return have, true
		}
	}
	return 0, false
}

func (sdkHost) CreateMessage(req json.RawMessage) (json.RawMessage, error) {
	var in sdk.CreateMessageRequest
	if err := json.Unmarshal(req, &in); err != nil {
		return nil, fmt.Errorf("not a CreateMessageRequest: %w", err)
	}
	out, err := sdk.CreateMessage(in)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// The files are the guest's own, over its WASI preopens: a path outside the
// plugin's allowed_paths finds no mount, and every path inside one is resolved
// by the sandbox (os.Root), as for a Go plugin's os calls.
func (sdkHost) ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }
func (sdkHost) WriteFile(path string, data []byte) error {
	return os.WriteFile(path, data, 0o644)
}

func (sdkHost) ReadDir(path string) ([]js.DirEntry, error) {
	entries, err := os.ReadDir(path)
	out := make([]js.DirEntry, 0, len(entries))
	for _, d := range entries {
		out = append(out, js.DirEntry{Name: d.Name(), IsDirectory: d.IsDir()})
	}
	return out, err
}
