package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// CheckpointFormat names the checkpoint's format, its first field.
const CheckpointFormat = "agenthost-audit-checkpoint/1"

// Checkpoint anchors a log as it was at one moment, for keeping outside the database
// (SECURITY.md, "The audit log"): which log (the hash of its record 1, its genesis),
// how many records it held and the hash of the last. The chain makes the last hash seal
// every record before it, so a log that later verifies against the checkpoint holds the
// same first Records records, unchanged, and was not cut below them.
type Checkpoint struct {
	Format  string    `json:"format"`
	Log     string    `json:"log"`     // hash of record 1 (the genesis record)
	Records int64     `json:"records"` // how many records: the last one's Seq
	Head    string    `json:"head"`    // hash of record Records
	Time    time.Time `json:"time"`    // when record Records was written
	Legacy  bool      `json:"legacy,omitempty"`
}

// maxCheckpoint bounds a checkpoint file: one is about 300 bytes.
const maxCheckpoint = 4 << 10

// ReadCheckpoint reads a checkpoint (JSON, as `audit checkpoint` writes it), refusing
// anything else: unknown fields, a format of another version, malformed hashes.
func ReadCheckpoint(r io.Reader) (Checkpoint, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxCheckpoint+1))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("read checkpoint: %w", err)
	}
	if len(b) > maxCheckpoint {
		return Checkpoint{}, fmt.Errorf("not a checkpoint: more than %d bytes", maxCheckpoint)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c Checkpoint
	if err := dec.Decode(&c); err != nil {
		return Checkpoint{}, fmt.Errorf("not a checkpoint: %w", err)
	}
	switch {
	case c.Format != CheckpointFormat:
		return Checkpoint{}, fmt.Errorf("not a checkpoint: format %q, want %q", c.Format, CheckpointFormat)
	case !isHash(c.Log) || !isHash(c.Head):
		return Checkpoint{}, errors.New("not a checkpoint: log and head must be SHA-256 hashes (64 hex digits)")
	case c.Records < 1:
		return Checkpoint{}, fmt.Errorf("not a checkpoint: %d records", c.Records)
	}
	return c, nil
}

func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// VerifyCheckpoint checks a log that VerifyLog accepted against a checkpoint taken
// before: it is the same log (same record 1), it still holds the checkpoint's records
// (a cut tail is found here), and its record Records is the one checkpointed (a log
// rewritten up to there, even with a valid chain, is found here).
func VerifyCheckpoint(records []Record, c Checkpoint) error {
	if len(records) == 0 || records[0].Hash != c.Log {
		return errors.New("the audit log is not the one checkpointed: its record 1 differs (the log was replaced, or rewritten from its start)")
	}
	n := int64(len(records))
	if n < c.Records {
		return fmt.Errorf("the audit log holds %d records, the checkpoint %d: records %d to %d were deleted (the tail was cut)", n, c.Records, n+1, c.Records)
	}
	if r := records[c.Records-1]; r.Seq != c.Records || r.Hash != c.Head {
		return fmt.Errorf("audit record %d is not the one checkpointed: the log was rewritten up to it", c.Records)
	}
	return nil
}
