package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// recordingHost is the sandbox.Host of the hook tests: its model answers a
// fixed summary and it records every request and notification.
type recordingHost struct {
	mu       sync.Mutex
	answer   string
	requests []string
	notified []string
	kv       map[string][]byte
}

func (h *recordingHost) CreateMessage(_ context.Context, plugin string, req json.RawMessage) (json.RawMessage, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests = append(h.requests, string(req))
	return json.Marshal(map[string]any{
		"role": "assistant", "model": "test-model", "stopReason": "endTurn",
		"content": map[string]string{"type": "text", "text": h.answer},
	})
}

func (h *recordingHost) Notify(_ context.Context, plugin, method string, params json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notified = append(h.notified, fmt.Sprintf("%s %s %s", plugin, method, params))
}

func (h *recordingHost) KVGet(_ context.Context, plugin, key string) ([]byte, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.kv[plugin+"/"+key]
	return v, ok, nil
}

func (h *recordingHost) KVSet(_ context.Context, plugin, key string, val []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.kv == nil {
		h.kv = map[string][]byte{}
	}
	h.kv[plugin+"/"+key] = val
	return nil
}

func (h *recordingHost) KVDelete(_ context.Context, plugin, key string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.kv, plugin+"/"+key)
	return nil
}
