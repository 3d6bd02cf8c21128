package loop

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Attachments: the bytes of image, audio and file parts. The run is the one door they
// enter by (storeParts, for input and for tool results): each part's bytes are sniffed
// for their MIME type (SniffMIME; the client's type is ignored), bounded per part, stored
// once per session under their sha256 (the store bounds the session's total in the same
// transaction), and the part keeps only the reference. A model call's copy of the
// history gets the bytes back (withAttachments); nothing stored or emitted holds them.

// AttachmentLimits bounds attachments; zero fields take the defaults.
type AttachmentLimits struct {
	PartBytes    int64 // one part; default 20 MiB
	SessionBytes int64 // all of a session's attachments; default 100 MiB
}

// Default attachment limits.
const (
	DefaultAttachmentPartBytes    = 20 << 20
	DefaultAttachmentSessionBytes = 100 << 20
)

func (l AttachmentLimits) withDefaults() AttachmentLimits {
	if l.PartBytes <= 0 {
		l.PartBytes = DefaultAttachmentPartBytes
	}
	if l.SessionBytes <= 0 {
		l.SessionBytes = DefaultAttachmentSessionBytes
	}
	return l
}

// Attachment is stored bytes with their sniffed MIME type, addressed by SHA256 (hex).
type Attachment struct {
	SHA256   string
	MimeType string
	Data     []byte
}

// AttachmentStore is the SessionStore extension that keeps attachments: once per session
// and hash, sealed like the session's other values, deleted with the session.
type AttachmentStore interface {
	// PutAttachment stores a; the same hash stored again in the session is a no-op. A
	// new attachment that takes the session's total past sessionLimit bytes is refused
	// with an error wrapping ErrAttachmentTooLarge, in the transaction that would store it.
	PutAttachment(ctx context.Context, sessionID string, a Attachment, sessionLimit int64) error
	// Attachment loads one; ErrNoAttachment when the session holds no such hash.
	Attachment(ctx context.Context, sessionID, sha string) (Attachment, error)
}

var (
	// ErrAttachmentTooLarge is a part or a session over its attachment limit.
	ErrAttachmentTooLarge = errors.New("attachment over its limit")
	// ErrNoAttachment is a reference to an attachment the session does not hold.
	ErrNoAttachment = errors.New("no such attachment in this session")
)

// storeParts is the door: it stores the media parts of parts that carry bytes (Data, or
// an image's data: URL) and returns the parts with references in their place. A part
// that names an attachment without bytes must name one the session holds.
func (r *run) storeParts(parts []Part) ([]Part, error) {
	var out []Part
	for i, p := range parts {
		np, changed, err := r.storePart(p)
		if err != nil {
			return nil, fmt.Errorf("part %d (%s): %w", i+1, partLabel(p), err)
		}
		if changed && out == nil {
			out = append([]Part(nil), parts...)
		}
		if out != nil {
			out[i] = np
		}
	}
	if out == nil {
		return parts, nil
	}
	return out, nil
}

func (r *run) storePart(p Part) (Part, bool, error) {
	if !p.IsMedia() {
		return p, false, nil
	}
	data, err := partBytes(p)
	if err != nil {
		return p, false, err
	}
	store, ok := r.cfg.Store.(AttachmentStore)
	switch {
	case data == nil && p.Attachment == "":
		if p.Type == PartImage && p.URL != "" {
			return p, false, nil // an image by URL: the provider fetches it
		}
		return p, false, errors.New("a media part needs its bytes or an attachment reference")
	case !ok:
		return p, false, errors.New("this session store keeps no attachments")
	case data == nil: // a reference: it must be this session's
		a, err := store.Attachment(r.sctx, r.in.SessionID, p.Attachment)
		if err != nil {
			return p, false, err
		}
		return Part{Type: partTypeOf(a.MimeType), Attachment: a.SHA256, MimeType: a.MimeType,
			Size: int64(len(a.Data)), Name: cleanName(p.Name)}, true, nil
	}
	lim := r.cfg.Attachments.withDefaults()
	if int64(len(data)) > lim.PartBytes {
		return p, false, fmt.Errorf("%w: %d bytes, over the %d-byte limit per part", ErrAttachmentTooLarge, len(data), lim.PartBytes)
	}
	sum := sha256.Sum256(data)
	a := Attachment{SHA256: hex.EncodeToString(sum[:]), MimeType: SniffMIME(data, p.Name), Data: data}
	if err := store.PutAttachment(r.sctx, r.in.SessionID, a, lim.SessionBytes); err != nil {
		return p, false, err
	}
	np := Part{Type: partTypeOf(a.MimeType), Attachment: a.SHA256, MimeType: a.MimeType,
		Size: int64(len(data)), Name: cleanName(p.Name)}
	if p.Type == PartFile && !strings.HasPrefix(p.URL, "data:") {
		np.URL = p.URL // an embedded resource's URI
	}
	return np, true, nil
}

// partBytes is a media part's bytes: its Data, or an image's data: URL decoded; nil
// when it has neither.
func partBytes(p Part) ([]byte, error) {
	if p.Data == nil && p.Type == PartImage && strings.HasPrefix(p.URL, "data:") {
		return decodeDataURL(p.URL)
	}
	return p.Data, nil
}

// partLabel names a part in an error: its type, and its file name when it has one.
func partLabel(p Part) string {
	if p.Name != "" {
		return fmt.Sprintf("%s %q", p.Type, cleanName(p.Name))
	}
	return string(p.Type)
}

func decodeDataURL(u string) ([]byte, error) {
	meta, data, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return nil, errors.New("an image data: URL must be base64")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, fmt.Errorf("image data: URL: %w", err)
	}
	return b, nil
}

// storeMessages stores the media of the input messages (the run's start).
func (r *run) storeMessages(msgs []Message) ([]Message, error) {
	var out []Message
	for i, m := range msgs {
		parts, err := r.storeParts(m.Content)
		if err != nil {
			return nil, &startError{fmt.Errorf("input message %d: %w", i+1, err)}
		}
		if len(parts) > 0 && len(m.Content) > 0 && &parts[0] != &m.Content[0] && out == nil {
			out = append([]Message(nil), msgs...)
		}
		if out != nil {
			out[i].Content = parts
		}
	}
	if out == nil {
		return msgs, nil
	}
	return out, nil
}

// storeResult stores the media of a tool's result; a part the store refuses becomes a
// text part saying why, and the run goes on (the tool's other parts are kept).
func (r *run) storeResult(res ToolResult) ToolResult {
	if r.in.direct != nil {
		return res // a direct call stores no message: its caller gets the bytes as they came
	}
	var out []Part
	for i, p := range res.Content {
		np, changed, err := r.storePart(p)
		if err != nil {
			np, changed = TextPart(fmt.Sprintf("[%s not kept: %v]", partLabel(p), err)), true
		}
		if changed && out == nil {
			out = append([]Part(nil), res.Content...)
		}
		if out != nil {
			out[i] = np
		}
	}
	if out != nil {
		res.Content = out
	}
	return res
}

// withAttachments is msgs with every attachment's bytes loaded into its part (Data),
// for the model call; the history's messages are copied, never changed. Loaded bytes
// are kept for the run's later calls.
func (r *run) withAttachments(msgs []Message) ([]Message, error) {
	var out []Message
	for i := range msgs { // by index: copying every Message and Part was most of a call's cost
		m := &msgs[i]
		var parts []Part
		for j := range m.Content {
			p := &m.Content[j]
			if p.Attachment == "" || p.Data != nil {
				continue
			}
			data, err := r.attachmentBytes(p.Attachment)
			if err != nil {
				return nil, fmt.Errorf("message %d, %s: %w", i+1, partLabel(*p), err)
			}
			if parts == nil {
				parts = append([]Part(nil), m.Content...)
			}
			parts[j].Data = data
		}
		if parts == nil {
			continue
		}
		if out == nil {
			out = append([]Message(nil), msgs...)
		}
		out[i].Content = parts
	}
	if out == nil {
		return msgs, nil
	}
	return out, nil
}

func (r *run) attachmentBytes(sha string) ([]byte, error) {
	if b, ok := r.attached[sha]; ok {
		return b, nil
	}
	store, ok := r.cfg.Store.(AttachmentStore)
	if !ok {
		return nil, errors.New("this session store keeps no attachments")
	}
	a, err := store.Attachment(r.ctx, r.in.SessionID, sha)
	if err != nil {
		return nil, err
	}
	if r.attached == nil {
		r.attached = map[string][]byte{}
	}
	r.attached[sha] = a.Data
	return a.Data, nil
}

// replaceText is parts with their text replaced by text (a guardrail's rewrite), the
// media parts kept after it: a redaction changes words, never drops an attachment.
func replaceText(parts []Part, text string) []Part {
	out := []Part{TextPart(text)}
	for _, p := range parts {
		if p.Type != PartText {
			out = append(out, p)
		}
	}
	return out
}

// mediaTokens estimates the input tokens of a media part, for budgets (L18): an image
// about 1,600 (a large image as the providers scale it), an audio clip one per 1,000
// bytes (about 16 a second of mp3), a text file one per 4 bytes like text, any other
// file (a PDF) one per 50 bytes and at least 1,000 (a page is 1,500 to 3,000).
func mediaTokens(p *Part) int {
	switch p.Type {
	case PartImage:
		return 1600
	case PartAudio:
		return int(p.Size / 1000)
	case PartFile:
		if strings.HasPrefix(p.MimeType, "text/") {
			return int(p.Size / 4)
		}
		return max(1000, int(p.Size/50))
	}
	return 0
}
