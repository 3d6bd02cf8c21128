package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// Feedback is what a person said of a run: a score and a comment. Score is -1 (thumbs
// down), 1 (thumbs up, or a rating of 1) or a rating from 0 to 5; a run may get several
// (several people, or one who changed their mind: the latest counts for insights).
type Feedback struct {
	SessionID string    `json:"session_id"`
	RunID     string    `json:"run_id"`
	Agent     string    `json:"agent,omitempty"` // the agent that ran it, as its run_started says
	Score     int       `json:"score"`
	Comment   string    `json:"comment,omitempty"`
	Time      time.Time `json:"time"`
}

// MaxFeedbackComment bounds a comment, in bytes.
const MaxFeedbackComment = 4096

// ErrNoSuchRun is returned when feedback names a run its session does not have.
var ErrNoSuchRun = errors.New("no such run")

// Check says what is wrong with f as given by a client (before the store fills Agent
// and Time).
func (f Feedback) Check() error {
	switch {
	case f.SessionID == "" || f.RunID == "":
		return errors.New("feedback names no session or run")
	case f.Score < -1 || f.Score > 5:
		return fmt.Errorf("score %d: want -1 (thumbs down), 1 (thumbs up) or a rating from 0 to 5", f.Score)
	case len(f.Comment) > MaxFeedbackComment:
		return fmt.Errorf("comment of %d bytes: at most %d", len(f.Comment), MaxFeedbackComment)
	case !utf8.ValidString(f.Comment):
		return errors.New("comment is not valid UTF-8")
	}
	return nil
}

// FeedbackStore is an optional SessionStore extension that keeps feedback on runs.
type FeedbackStore interface {
	// AddFeedback stores f; f.Time is set by the caller.
	AddFeedback(ctx context.Context, f Feedback) error
	// Feedback lists feedback given at or after since, oldest first.
	Feedback(ctx context.Context, since time.Time) ([]Feedback, error)
}

// RunAgent is the agent that ran a session's run, as its run_started event says ("" when
// the session has no such run).
func RunAgent(entries []Entry, runID string) (agent string, found bool) {
	for _, e := range entries {
		if e.Kind == EntryEvent && e.Event != nil && e.Event.RunID == runID && e.Event.Type == EventRunStarted {
			return e.Event.Agent, true
		}
	}
	return "", false
}

var _ FeedbackStore = (*MemoryStore)(nil)

func (s *MemoryStore) AddFeedback(_ context.Context, f Feedback) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.feedback = append(s.feedback, f)
	return nil
}

func (s *MemoryStore) Feedback(_ context.Context, since time.Time) ([]Feedback, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Feedback
	for _, f := range s.feedback {
		if !f.Time.Before(since) {
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b Feedback) int { return a.Time.Compare(b.Time) })
	return out, nil
}
