package store

import (
	"github.com/agenthost/agenthost/loop"
)

// The transcript projection's codec and rules (transcript.go, transcriptcodec.go), for
// the other stores that keep one (store/postgres): thin wrappers, so that every store
// encodes, chunks, seals and checks it the same way and one fuzz test covers them all.

// The projection's lag and chunk size (transcript.go): a write extends it only when the
// transcript entries not in it reach TranscriptLagMin; one that finds TranscriptLagCap
// or more leaves it to the next cold read; an extension starts a new chunk past
// TranscriptChunkMax bytes.
const (
	TranscriptLagMin   = lagMin
	TranscriptLagCap   = lagCap
	TranscriptChunkMax = chunkMax
)

// IsTranscript reports whether an entry belongs to the projection (a message or a
// compaction: loop.HeadOf's rule).
func IsTranscript(e *loop.Entry) bool { return isTranscript(e) }

// TranscriptAAD binds a sealed chunk to its session and place.
func TranscriptAAD(session string, chunk int64) []byte { return transcriptAAD(session, chunk) }

// TranscriptAddition is the entries one write adds to a projection, encoded.
type TranscriptAddition struct {
	add  encodedEntry
	n    counts
	last int64
}

// Add encodes a transcript entry after those added before; an entry that cannot be
// projected is an error (the store then drops the session's projection).
func (a *TranscriptAddition) Add(e *loop.Entry) error {
	p := projectOf(e)
	if p.err != nil {
		return p.err
	}
	a.add.fields = append(a.add.fields, p.p.fields...)
	a.add.text = append(a.add.text, p.p.text...)
	for i := range a.n {
		a.n[i] += p.n[i]
	}
	a.last = e.Seq
	return nil
}

// Size is how many bytes the addition adds to a chunk; Last the seq of its last entry
// (0: nothing added).
func (a *TranscriptAddition) Size() int   { return len(a.add.fields) + len(a.add.text) }
func (a *TranscriptAddition) Last() int64 { return a.last }

// AppendTo is chunk (plain; nil for a new one) with the addition appended; a chunk that
// does not decode is an error.
func (a *TranscriptAddition) AppendTo(chunk []byte) ([]byte, error) {
	return appendChunk(chunk, a.add, a.n)
}

// TranscriptChunk is a chunk as a rebuild makes it: its plain body and the seq it ends at.
type TranscriptChunk struct {
	Last int64
	Body []byte
}

// BuildTranscriptChunks encodes a whole transcript (loop.HeadOf's) as its appends would
// have, in chunks of about TranscriptChunkMax bytes.
func BuildTranscriptChunks(tr []loop.Entry) ([]TranscriptChunk, error) {
	built, err := buildChunks(tr)
	if err != nil {
		return nil, err
	}
	out := make([]TranscriptChunk, len(built))
	for i, c := range built {
		out[i] = TranscriptChunk{Last: c.last, Body: c.body}
	}
	return out, nil
}

// DecodeTranscriptChunk appends a plain chunk's entries to dst, in order; a chunk that
// is truncated, fails its checksum or its counts, or holds text that is not UTF-8 is an
// error (never a panic). The entries share the chunk's allocations: read only.
func DecodeTranscriptChunk(b []byte, dst []loop.Entry) ([]loop.Entry, error) {
	return decodeChunk(b, dst)
}

// Adopt keeps h, read whole (a cold read), as the session's head, without copying its
// transcript; anchor is the stored body of the row at h.LastSeq. The returned head's
// transcript is shared with the cache: read only.
func (c *HeadCache) Adopt(session string, h loop.SessionHead, anchor []byte) loop.SessionHead {
	return c.adopt(session, h, anchor)
}
