package fake

import (
	"context"

	"github.com/agenthost/agenthost/loop"
)

// DiscardStore accepts every write and remembers nothing: with it a loop benchmark
// measures the loop, not a store's heap growing over thousands of sessions.
type DiscardStore struct{}

func (DiscardStore) Append(context.Context, string, ...loop.Entry) error    { return nil }
func (DiscardStore) Load(context.Context, string) ([]loop.Entry, error)     { return nil, nil }
func (DiscardStore) SaveRun(context.Context, loop.RunRecord) error          { return nil }
func (DiscardStore) Runs(context.Context, string) ([]loop.RunRecord, error) { return nil, nil }
func (DiscardStore) KVGet(context.Context, string, string) ([]byte, bool, error) {
	return nil, false, nil
}
func (DiscardStore) KVSet(context.Context, string, string, []byte) error { return nil }
