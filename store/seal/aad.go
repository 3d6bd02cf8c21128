package seal

import "strconv"

// The additional data each sealed value is bound to: its row. A sealed value copied into
// another row (another session's entry, another plugin's key) does not open.

// EntryAAD binds an entry body to its session and seq.
func EntryAAD(session string, seq int64) []byte {
	return []byte("entry\x00" + session + "\x00" + strconv.FormatInt(seq, 10))
}

// KVAAD binds a plugin value to its plugin and key.
func KVAAD(plugin, key string) []byte { return []byte("kv\x00" + plugin + "\x00" + key) }

// RunNoteAAD binds a run's note (loop.RunRecord.Note) to its session and run.
func RunNoteAAD(session, run string) []byte {
	return []byte("runnote\x00" + session + "\x00" + run)
}

// MemoryAAD binds a memory's text (field "text") or metadata ("metadata") to its id.
func MemoryAAD(id, field string) []byte { return []byte("memory\x00" + id + "\x00" + field) }

// JobAAD binds a queued job's sealed payload to its job: its kind, what it runs on (a
// session, a workflow) and its run id. A payload copied into another job does not open.
func JobAAD(kind, on, run string) []byte {
	return []byte("job\x00" + kind + "\x00" + on + "\x00" + run)
}

// CacheAAD binds a cached tool result to its cache key.
func CacheAAD(key string) []byte { return []byte("toolcache\x00" + key) }

// AttachmentAAD binds an attachment's bytes to its session and hash.
func AttachmentAAD(session, sha string) []byte {
	return []byte("attachment\x00" + session + "\x00" + sha)
}
