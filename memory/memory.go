package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind says how an entry is used: a fact is recalled when it matches what the user
// says; a preference is part of the user's profile, given to the model on every run.
type Kind string

const (
	KindFact       Kind = "fact"
	KindPreference Kind = "preference"
)

// MaxText is the longest entry text a Store accepts, in bytes: memory is for facts, not
// documents, and every recalled entry costs context.
const MaxText = 4096

// Entry is one memory. User "" is an agent's shared knowledge (every user of that agent
// sees it); Agent "" is a user's memory every agent of the host sees; both set, a memory
// of that user with that agent only. One of them is always set.
type Entry struct {
	ID       string            `json:"id"`
	User     string            `json:"user,omitempty"`
	Agent    string            `json:"agent,omitempty"`
	Kind     Kind              `json:"kind"`
	Text     string            `json:"text"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Session and Run are where the entry was made, if a run made it.
	Session string    `json:"session,omitempty"`
	Run     string    `json:"run,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Vector is the text's embedding when the host has an embedding provider: similarity
	// search ranks by it beside the words. Not shown in listings.
	Vector []float32 `json:"-"`
	// VectorModel names what made Vector ("PROVIDER/MODEL" of [memory.embeddings]), so
	// that `memory reindex` knows which vectors another model made. "" with a vector: a
	// vector stored before models were recorded.
	VectorModel string `json:"vector_model,omitempty"`
}

// Hit is an entry a search found, with its rank: higher is better, comparable only
// within one search.
type Hit struct {
	Entry
	Score float64 `json:"score"`
}

// Query is a search on behalf of User with Agent: Text is what to match (words; any
// search syntax in it is taken as words), Kind limits the kind ("" = any), Limit the
// number of hits (0 = 10).
type Query struct {
	User, Agent string
	Text        string
	Kind        Kind
	Limit       int
	// Vector is Text's embedding, when the host has an embedding provider: the search is
	// then hybrid, words and similarity ranked together (Fuse).
	Vector []float32
}

// Filter selects entries to list or delete: those of User (and, if set, of Agent and
// Kind), or the one ID. User "" with Agent set selects the agent's shared entries.
type Filter struct {
	User, Agent string
	Kind        Kind
	ID          string
	Limit       int // list only; 0 = all
}

// Store keeps memories. Implementations: store.SQLite, postgres.Store, InMemory.
type Store interface {
	AddMemory(ctx context.Context, e Entry) error
	// SearchMemory returns the entries Query.User may see that match q.Text, best first.
	SearchMemory(ctx context.Context, q Query) ([]Hit, error)
	// ListMemory returns the entries f selects, newest first.
	ListMemory(ctx context.Context, f Filter) ([]Entry, error)
	// DeleteMemory deletes the entries f selects and says how many there were. A filter
	// that selects nothing (no User, Agent or ID) is an error, not "everything".
	DeleteMemory(ctx context.Context, f Filter) (int, error)
}

// ErrQuota is the answer to an entry past its user's quota (the host's [memory]
// max_per_user and max_bytes_per_user): the user has to delete memories first.
var ErrQuota = errors.New("memory quota reached")

// ErrInvalid wraps what is wrong with an entry a caller gave (not a failing store).
var ErrInvalid = errors.New("invalid memory")

// ErrEmptyFilter is DeleteMemory's answer to a filter that names no one.
var ErrEmptyFilter = errors.New("memory: a delete must name a user, an agent or an id")

// New returns a new entry with an id and times, checked (Check).
func New(user, agent string, kind Kind, text string, now time.Time) (Entry, error) {
	if kind == "" {
		kind = KindFact
	}
	e := Entry{ID: NewID(), User: user, Agent: agent, Kind: kind, Text: text, Created: now.UTC(), Updated: now.UTC()}
	return e, Check(e)
}

// Check says what is wrong with an entry a Store is asked to keep.
func Check(e Entry) error {
	switch {
	case e.ID == "":
		return errors.New("memory: entry without an id")
	case e.User == "" && e.Agent == "":
		return errors.New("memory: an entry belongs to a user, an agent or both")
	case e.Kind != KindFact && e.Kind != KindPreference:
		return fmt.Errorf("memory: unknown kind %q (fact, preference)", e.Kind)
	case e.Text == "":
		return errors.New("memory: empty text")
	case len(e.Text) > MaxText:
		return fmt.Errorf("memory: text of %d bytes, longer than %d", len(e.Text), MaxText)
	case !utf8.ValidString(e.Text):
		return errors.New("memory: text is not valid UTF-8")
	case strings.ContainsRune(e.Text, 0):
		return errors.New("memory: text contains a NUL byte")
	}
	return nil
}

// NewID returns a new entry id.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "mem_" + hex.EncodeToString(b[:])
}

// Visible reports whether a search by q may see e: the one rule every Store keeps.
func (q Query) Visible(e Entry) bool {
	if e.User == "" {
		return e.Agent == q.Agent && q.Agent != ""
	}
	return q.User != "" && e.User == q.User && (e.Agent == "" || e.Agent == q.Agent)
}

// Selects reports whether f selects e.
func (f Filter) Selects(e Entry) bool {
	if f.ID != "" {
		return e.ID == f.ID && (f.User == "" || e.User == f.User)
	}
	if f.User == "" && f.Agent == "" {
		return false
	}
	return e.User == f.User && (f.Agent == "" || e.Agent == f.Agent) && (f.Kind == "" || e.Kind == f.Kind)
}

// Empty reports whether f names no one.
func (f Filter) Empty() bool { return f.ID == "" && f.User == "" && f.Agent == "" }
