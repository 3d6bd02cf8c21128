// Package js is the JavaScript engine of the JS runtime plugin
// (plugins/jsruntime): it runs a bundle — one CommonJS script, as
// jsbundle makes it from a user's .js or .ts source — in goja, collects the
// tools the bundle declares with tool({name, description, inputSchema,
// handler}) from the "agenthost" module, and calls their handlers with a
// call's arguments, turning what they return or throw into a CallToolResult.
//
// It is plain Go, so its rules are tested with `go test` on any platform;
// inside the plugin, Host is the SDK's host functions (KV, config, HTTP,
// create_message, logging, and files over the guest's preopens), and every limit (time, memory, output) is the
// sandbox's, exactly as for any other plugin.
//
// What it must not do: import sandbox, loop or host (it runs inside a
// plugin); give a bundle anything but the Host it was handed (no clock
// beyond goja's Date, no network of its own, and files only through Host's
// FS, which in the plugin is the guest's WASI preopens); or call a Host
// function while the bundle loads (a pre-initialised plugin loads it in
// _initialize, where host functions are refused).
package js
