// Package seal encrypts what the stores keep at rest: entry bodies (messages and events),
// plugin key/value values and memories, with AES-256-GCM under keys that carry ids, so a
// key can be rotated (a new key first, the old ones kept until `agenthost store
// rotate-key` has re-sealed everything).
//
// A sealed value is a JSON string, "ahe1:KEYID:BASE64(nonce‖ciphertext)", so it fits the
// columns that hold JSON (PostgreSQL's jsonb) as well as blobs. Each value is sealed with
// additional data naming its row (session and seq, plugin and key, memory id), so a
// sealed value copied into another row does not open. A value that is not sealed opens as
// itself: databases written before encryption stay readable, and rotate-key seals them.
//
// Memory search cannot run over ciphertext: an encrypted store indexes each word of a
// memory as a keyed hash (HMAC-SHA-256 under a key derived from the data key, "blind
// index"), and a search hashes its words the same way under every key of the ring. Words
// match exactly (lower-cased); what a database copy reveals is which memories share a
// word, not the word.
//
// What it must not do: import the loop or a store, keep keys anywhere but memory, or
// choose where keys come from (the host does: [store] key_file or AGENTHOST_STORE_KEY).
package seal
