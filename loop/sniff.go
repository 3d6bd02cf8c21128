package loop

import (
	"bytes"
	"net/http"
	"path"
	"strings"
)

// SniffMIME is the MIME type of data as its bytes say, never as a client claims:
// net/http.DetectContentType, plus the magic it lacks (MPEG audio frames without an ID3
// tag) and the names it gives differently (audio/wave is audio/wav). A text file's name
// may narrow text/plain to a text type (CSV, Markdown, JSON), never widen it.
func SniffMIME(data []byte, name string) string {
	switch {
	case bytes.HasPrefix(data, []byte("%PDF-")):
		return "application/pdf"
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WAVE")):
		return "audio/wav"
	case bytes.HasPrefix(data, []byte("ID3")) || mpegFrame(data):
		return "audio/mpeg"
	}
	mime, _, _ := strings.Cut(http.DetectContentType(data), ";")
	if mime == "text/plain" {
		if t, ok := textByExt[strings.ToLower(path.Ext(name))]; ok {
			return t
		}
	}
	return mime
}

// textByExt narrows text/plain by a file's extension.
var textByExt = map[string]string{
	".csv": "text/csv", ".md": "text/markdown", ".json": "application/json", ".tsv": "text/tab-separated-values",
}

// mpegFrame reports an MPEG-1/2 layer III frame header (an mp3 without ID3): 11 sync
// bits, a version other than reserved, layer III, a bitrate index other than bad.
func mpegFrame(b []byte) bool {
	if len(b) < 4 || b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
		return false
	}
	version, layer, rate := (b[1]>>3)&3, (b[1]>>1)&3, b[2]>>4
	return version != 1 && layer == 1 && rate != 0xF && rate != 0
}

// partTypeOf is the part type a sniffed MIME type makes.
func partTypeOf(mime string) PartType {
	switch {
	case strings.HasPrefix(mime, "image/"):
		return PartImage
	case strings.HasPrefix(mime, "audio/"):
		return PartAudio
	}
	return PartFile
}

// cleanName is a client's file name as a part keeps it: its last element, without
// control characters, at most 255 bytes of valid UTF-8.
func cleanName(name string) string {
	name = path.Base(strings.ReplaceAll(fixUTF8(name), "\\", "/"))
	if name == "." || name == "/" {
		return ""
	}
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
	for len(name) > 255 {
		_, size := lastRune(name)
		name = name[:len(name)-size]
	}
	return name
}

func lastRune(s string) (rune, int) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i]&0xC0 != 0x80 {
			return rune(s[i]), len(s) - i
		}
	}
	return 0, 1
}
