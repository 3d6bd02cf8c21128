package audit

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// ActionGenesis is the first record of a log, written by the store when it creates the
// log (before any other record). Its detail "log" is 128 random bits: the log's identity,
// which a checkpoint names through the genesis record's hash.
const ActionGenesis = "audit.genesis"

// Genesis is the first record of a new log, chained (Seq 1, no Prev).
func Genesis(at time.Time) Record {
	id := make([]byte, 16)
	_, _ = rand.Read(id) // crypto/rand.Read does not fail (it panics if the system's source does)
	r := Record{Time: at, Action: ActionGenesis, Actor: "agenthost", Detail: map[string]string{"log": hex.EncodeToString(id)}}
	Chain(&r, nil)
	return r
}

// NoGenesisError is VerifyLog's answer for a log whose record 1 is not a genesis record:
// a log started before agenthost wrote one (a legacy log), or one whose head was deleted
// and the rest renumbered and rehashed, or whose every record was deleted. Only a
// checkpoint taken before tells these apart.
type NoGenesisError struct {
	First *Record // record 1; nil for an empty log
}

func (e *NoGenesisError) Error() string {
	if e.First == nil {
		return "the audit log is empty: its genesis record is missing (every record was deleted)"
	}
	return fmt.Sprintf("the audit log has no genesis record: record 1 is a %q record (a log begun before agenthost wrote one, "+
		"or one whose head was deleted and the rest rewritten); --legacy accepts a log begun before", e.First.Action)
}

// VerifyLog checks a whole log, records from Seq 1 on: it begins with its genesis record
// (or, when legacy is true, with any record 1 without a prev: a log begun before genesis
// records), no other record is a genesis, and the chain holds (Verify). So a deleted head
// (the log starts after 1), a deleted middle (a gap) and a renumbering (a hash that no
// longer matches its record) are all found. It returns the log's checkpoint as of its
// last record. A cut tail is found by VerifyCheckpoint against a checkpoint taken before.
func VerifyLog(records []Record, legacy bool) (Checkpoint, error) {
	if len(records) == 0 {
		return Checkpoint{}, &NoGenesisError{}
	}
	first := records[0]
	if first.Seq != 1 {
		return Checkpoint{}, fmt.Errorf("the audit log begins at record %d: records 1 to %d were deleted", first.Seq, first.Seq-1)
	}
	isGenesis := first.Action == ActionGenesis && first.Detail["log"] != ""
	if !isGenesis && !legacy {
		return Checkpoint{}, &NoGenesisError{First: &first}
	}
	for _, r := range records[1:] {
		if r.Action == ActionGenesis {
			return Checkpoint{}, fmt.Errorf("audit record %d is a second genesis record", r.Seq)
		}
	}
	if err := Verify(records); err != nil {
		return Checkpoint{}, err
	}
	last := records[len(records)-1]
	return Checkpoint{Format: CheckpointFormat, Log: first.Hash, Records: last.Seq, Head: last.Hash, Time: last.Time, Legacy: !isGenesis}, nil
}
