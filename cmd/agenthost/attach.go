package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/loop"
)

// readAttachments reads the files of --attach as media parts of the prompt's message.
// Only the bytes and the file's base name go: the loop sniffs the type from the bytes,
// bounds the size and stores them with the session. A file is read up to one byte past
// the per-part limit, so a huge one is refused by the loop's limit without being read
// whole; a directory or a device is refused here.
func readAttachments(paths []string) ([]loop.Part, error) {
	var parts []loop.Part
	for _, p := range paths {
		data, err := readBounded(p, loop.DefaultAttachmentPartBytes+1)
		if err != nil {
			return nil, fmt.Errorf("--attach %s: %w", p, err)
		}
		parts = append(parts, loop.Part{Type: loop.PartFile, Name: filepath.Base(p), Data: data})
	}
	return parts, nil
}

func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// promptMessage is the user message of a run: the prompt's words, then the attachments.
func promptMessage(prompt string, attach []loop.Part) []loop.Message {
	if prompt == "" && len(attach) == 0 {
		return nil
	}
	m := loop.Message{Role: loop.RoleUser}
	if prompt != "" {
		m.Content = append(m.Content, loop.TextPart(prompt))
	}
	m.Content = append(m.Content, attach...)
	return []loop.Message{m}
}
