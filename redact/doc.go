// Package redact is the built-in PII guardrail ([redact] in agent.toml): it finds email
// addresses, phone numbers, payment card numbers (Luhn-checked), IBANs (mod-97-checked),
// API-key shapes and the manifest's own patterns, and replaces each with its kind in
// brackets ("[email]"). It is a loop.Guardrail like a Wasm guardrail plugin, run at the
// stages the manifest names, so redaction takes the loop's one guardrail path: what a
// stage redacts is what the run stores and sends on from there.
//
// It must not block (it only redacts), call out, or keep what it saw. Patterns are RE2
// (regexp), so the time a check takes is linear in the text, whatever the text.
package redact
