package loop

import (
	"errors"
	"fmt"
	"strings"
)

// mediaInfo describes the media parts of parts for the guardrails (GuardInput.Media), in
// their order; nil when there are none. A guardrail runs before the parts are stored (a
// blocked part is never kept), so the MIME type is sniffed here as storePart will sniff
// it, and the size is that of the bytes; a reference is described from the session's
// store (its stored type and size), and one the session does not hold is an error. With
// skipBad (a tool's result) a part that cannot be read is left out instead: storeResult
// turns it into a text part saying it was not kept, as it did before guardrails saw media.
//
// Never the bytes: a guardrail decides on what a part is (a kind, a type, a size), and a
// part's bytes (up to AttachmentLimits.PartBytes, 20 MiB by default) would be copied
// into every guardrail plugin's memory at every stage for it. A guardrail that must read
// a document's content needs it as text, which a converter gives.
func (r *run) mediaInfo(parts []Part, skipBad bool) ([]MediaInfo, error) {
	var out []MediaInfo
	for i, p := range parts {
		if !p.IsMedia() {
			continue
		}
		info := MediaInfo{Type: p.Type, Name: cleanName(p.Name)}
		data, err := partBytes(p)
		if err != nil && skipBad {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("part %d (%s): %w", i+1, partLabel(p), err)
		}
		switch {
		case data != nil:
			info.MimeType, info.Size = SniffMIME(data, p.Name), int64(len(data))
			info.Type = partTypeOf(info.MimeType)
		case p.Attachment != "":
			store, ok := r.cfg.Store.(AttachmentStore)
			if !ok {
				return nil, errors.New("this session store keeps no attachments")
			}
			a, err := store.Attachment(r.sctx, r.in.SessionID, p.Attachment)
			if err != nil && skipBad {
				continue
			} else if err != nil {
				return nil, fmt.Errorf("part %d (%s): %w", i+1, partLabel(p), err)
			}
			info.Type, info.MimeType, info.Size = partTypeOf(a.MimeType), a.MimeType, int64(len(a.Data))
		default: // an image by URL: the provider fetches it, nothing here knows its bytes
			info.MimeType, info.URL = p.MimeType, p.URL
		}
		if p.Type == PartFile && p.URL != "" && !strings.HasPrefix(p.URL, "data:") {
			info.URL = p.URL // an embedded resource's URI
		}
		out = append(out, info)
	}
	return out, nil
}

// mediaRefs is the stored media parts of parts as references (no bytes), for the
// tool_result event; nil when there are none.
func mediaRefs(parts []Part) []Part {
	var out []Part
	for _, p := range parts {
		if p.IsMedia() && p.Attachment != "" {
			out = append(out, Part{Type: p.Type, Attachment: p.Attachment, MimeType: p.MimeType, Name: p.Name, Size: p.Size})
		}
	}
	return out
}
