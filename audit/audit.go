package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Actions the host records.
const (
	ActionRunStart       = "run.start"
	ActionRunEnd         = "run.end"
	ActionRunAbort       = "run.abort" // a run stopped by a caller (HTTP abort, A2A tasks/cancel)
	ActionApproval       = "approval"
	ActionSessionDelete  = "session.delete"
	ActionMemoryDelete   = "memory.delete"
	ActionSessionShare   = "session.share"
	ActionSessionUnshare = "session.unshare"
	ActionSessionFork    = "session.fork" // a session forked from another at an entry, with the edits made
	ActionUserAdd        = "user.add"
	ActionUserRemove     = "user.remove"
	ActionStoreReseal    = "store.reseal"
	ActionWorkflowRun    = "workflow.run" // a workflow run started or resumed (with the decisions it carries)
)

// Record is one audit record. Seq numbers records from 1 with no gap; Prev is the hash
// of record Seq-1 ("" for the first) and Hash this record's (Chain).
type Record struct {
	Seq    int64             `json:"seq"`
	Time   time.Time         `json:"time"`
	Action string            `json:"action"`
	Actor  string            `json:"actor"`            // who asked: the run's user, "cli", "api", a worker
	Target string            `json:"target,omitempty"` // what: session/run, memory id, tool
	Detail map[string]string `json:"detail,omitempty"`
	Prev   string            `json:"prev"`
	Hash   string            `json:"hash"`
}

// Chain sets r's Prev and Hash after prev (nil for the first record): Hash is the
// SHA-256 of the record's JSON without its hash, which includes Prev, so each hash seals
// everything before it.
func Chain(r *Record, prev *Record) {
	r.Prev = ""
	r.Seq = 1
	if prev != nil {
		r.Prev, r.Seq = prev.Hash, prev.Seq+1
	}
	r.Time = r.Time.UTC().Round(time.Microsecond) // what both databases keep
	r.Hash = hashOf(*r)
}

func hashOf(r Record) string {
	r.Hash = ""
	b, _ := json.Marshal(r) // map keys are sorted: the JSON is canonical
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Verify checks records (in order, from Seq 1 or from any record whose Prev is trusted)
// and reports the first that breaks the chain: a gap in Seq, a Prev that is not the hash
// before it, or a Hash that is not its own.
func Verify(records []Record) error {
	for i, r := range records {
		if i > 0 {
			p := records[i-1]
			if r.Seq != p.Seq+1 {
				return fmt.Errorf("audit record %d follows %d: %d records are missing", r.Seq, p.Seq, r.Seq-p.Seq-1)
			}
			if r.Prev != p.Hash {
				return fmt.Errorf("audit record %d does not follow record %d: its prev is not that record's hash", r.Seq, p.Seq)
			}
		} else if r.Seq == 1 && r.Prev != "" {
			return fmt.Errorf("audit record 1 has a prev")
		}
		if h := hashOf(r); h != r.Hash {
			return fmt.Errorf("audit record %d was changed after it was written: its hash does not match", r.Seq)
		}
	}
	return nil
}

// Store keeps the log. AppendAudit chains r after the last record and stores it, as one
// step no other append can interleave with (a transaction under the store's write lock).
type Store interface {
	AppendAudit(ctx context.Context, r Record) (Record, error)
	// Audit lists records with Seq > after, oldest first, at most limit (0: all).
	Audit(ctx context.Context, after int64, limit int) ([]Record, error)
}

type requestIDKey struct{}

// WithRequestID carries the id of the request an action comes from (the server takes it
// from X-Request-Id), so the records it causes name it.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the request id ctx carries, "" for none.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}
