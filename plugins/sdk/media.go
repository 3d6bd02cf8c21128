package sdk

import (
	"encoding/base64"
	"encoding/json"
)

// Image is a successful result holding one image (PNG, JPEG, GIF, WebP). The host
// sniffs its type from the bytes, stores it with the session as an attachment and gives
// it to the model where the model takes images.
func Image(data []byte, mimeType string) CallToolResult {
	return CallToolResult{Content: []Content{{Type: "image", Data: base64.StdEncoding.EncodeToString(data), MimeType: mimeType}}}
}

// Audio is a successful result holding one audio clip (wav, mp3).
func Audio(data []byte, mimeType string) CallToolResult {
	return CallToolResult{Content: []Content{{Type: "audio", Data: base64.StdEncoding.EncodeToString(data), MimeType: mimeType}}}
}

// File is a successful result holding one file (a PDF, a CSV, ...) as an embedded
// resource: uri names it (its last element is the file name the model is shown), data
// goes as its blob.
func File(uri, mimeType string, data []byte) CallToolResult {
	r, _ := json.Marshal(struct {
		URI      string `json:"uri"`
		MimeType string `json:"mimeType,omitempty"`
		Blob     []byte `json:"blob"`
	}{uri, mimeType, data})
	return CallToolResult{Content: []Content{{Type: "resource", Resource: r}}}
}
