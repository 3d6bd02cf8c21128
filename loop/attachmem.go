package loop

import (
	"context"
	"fmt"
	"slices"
)

// PutAttachment implements AttachmentStore.
func (s *MemoryStore) PutAttachment(_ context.Context, id string, a Attachment, sessionLimit int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.attach[id]
	if _, ok := held[a.SHA256]; ok {
		return nil
	}
	total := int64(len(a.Data))
	for _, h := range held {
		total += int64(len(h.Data))
	}
	if total > sessionLimit {
		return fmt.Errorf("%w: the session's attachments would take %d bytes, over its %d-byte limit", ErrAttachmentTooLarge, total, sessionLimit)
	}
	if held == nil {
		if s.attach == nil {
			s.attach = map[string]map[string]Attachment{}
		}
		held = map[string]Attachment{}
		s.attach[id] = held
	}
	a.Data = slices.Clone(a.Data)
	held[a.SHA256] = a
	return nil
}

// Attachment implements AttachmentStore.
func (s *MemoryStore) Attachment(_ context.Context, id, sha string) (Attachment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.attach[id][sha]
	if !ok {
		return Attachment{}, fmt.Errorf("attachment %.12s: %w", sha, ErrNoAttachment)
	}
	return a, nil
}
