// Package jsbundle turns a JavaScript or TypeScript tool's source into the
// bundle the JS runtime plugin (plugins/jsruntime) runs: one CommonJS
// script with what the entry file imports, TypeScript's types stripped, and
// an inline source map so a thrown error's stack names the source's own
// file, line and column. It uses esbuild's Go API in the host process: no
// Node, no npm at run time.
//
// The host bundles at Load, each time (docs/javascript.md, "Where
// TypeScript is compiled"): esbuild takes milliseconds, and no built
// artifact can go stale beside its source. The bundle travels in the
// plugin's config, so the runtime module — compiled and pre-initialised
// once — is the same for every bundle and every edit. A bundle opens with
// Header; a file that does (`agenthost plugins build` wrote it) is taken as
// it is, checked but not bundled again.
//
// What it must not do: run the code it bundles (the sandbox does, in the
// runtime plugin), check types (esbuild strips them; a type checker is the
// author's tool), reach the network, or read any file but the entry and
// what it imports.
package jsbundle
