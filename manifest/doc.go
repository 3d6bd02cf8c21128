// Package manifest decodes and checks agent.toml (README.md is its reference; `agenthost
// init` writes a commented one). Load reads a file, Parse checks text a program made;
// both return a *Manifest whose paths are absolute (those that choose what the host reads
// or grants confined to the manifest's directory unless allow_outside_paths: paths.go), whose ${VAR} values are expanded and
// whose defaults are filled in, or an *Error naming file, line and key ("agent.toml:22:
// plugins[0].wasm: cannot read …") for anything wrong: an unknown key (with the nearest
// known one), a size or duration that does not parse, a number out of range, a missing
// file, a sha256 pin that does not match, a duplicate name, a reference to a provider,
// agent, plugin or workflow step that does not exist. An oci:// plugin is pulled into the
// manifest's cache and recorded in (or, with LockStrict, checked against) agent.lock.
//
// The checks are all here, one function per table, so that every command and every
// embedding program refuses the same manifests with the same messages. What can only be
// checked once things run (a plugin's tools, a tool a workflow step names) is the
// host's, which reports it at the manifest's key with ErrorAt and WorkflowErrorAt.
//
// A program that changes agent.toml (`insights apply`) does it here too: edit.go makes
// minimal edits of the text (one value, one line, one table), each proved by decoding the
// text before and after, and ReplaceFile writes the result only if it loads, over the
// text it was made from, atomically, under a lock on the file's directory.
//
// It must NOT start anything: no Wasm runtime, no provider process, no store, no
// network besides an oci:// pull. It is a leaf: the standard library, the TOML and YAML
// decoders, and the project packages whose types a manifest holds (confine,
// ociplugin, oidc, redact, workflow, and through them access and
// loop); never host, sandbox, providers or store (imports_test.go holds it to that).
package manifest
