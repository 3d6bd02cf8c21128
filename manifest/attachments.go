package manifest

// AttachmentsConfig is [attachments]: the bounds on the image, audio and file parts a
// session stores (loop.AttachmentLimits; docs/loop.md, "Content parts"). They are the
// host's, not an agent's: a session's attachments are one pool whichever agent of a
// team stored them. A key left out keeps its default.
type AttachmentsConfig struct {
	MaxPart    Size `toml:"max_part"`    // one part's bytes; default 20MiB
	MaxSession Size `toml:"max_session"` // all of a session's attachments; default 100MiB
}

// Attachment limits' defaults (loop.DefaultAttachmentPartBytes and …SessionBytes, which
// manifest may not import) and the largest part: a part is held whole in memory while it
// is sealed and stored, and SQLite and PostgreSQL keep a value of at most 1 GB.
const (
	defaultAttachmentPart    = 20 << 20
	defaultAttachmentSession = 100 << 20
	maxAttachmentPart        = 512 << 20
)

// checkAttachments refuses a part bound past maxAttachmentPart, and one larger than the
// session's (no part could ever be stored whole), at the key that was given.
func (m *Manifest) checkAttachments() error {
	a := m.Attachments
	part, session := int64(a.MaxPart), int64(a.MaxSession)
	if part == 0 {
		part = defaultAttachmentPart
	}
	if session == 0 {
		session = defaultAttachmentSession
	}
	switch {
	case part > maxAttachmentPart:
		return m.ErrorAt("attachments.max_part", "%s is more than a part may be (at most 512MiB)", sizeText(a.MaxPart))
	case part > session && a.MaxPart != 0:
		return m.ErrorAt("attachments.max_part", "%s is more than the session's max_session (%s): no part that large could be stored", sizeText(a.MaxPart), sizeText(Size(session)))
	case part > session:
		return m.ErrorAt("attachments.max_session", "%s is less than one part's max_part (%s, the default): a session could not hold one part that large", sizeText(a.MaxSession), sizeText(Size(part)))
	}
	return nil
}

func sizeText(s Size) string { b, _ := s.MarshalText(); return string(b) }
