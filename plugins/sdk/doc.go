// Package sdk is the Go SDK for agenthost plugins (ABI.md): tools
// in the hyper-mcp "mcp" ABI, and the context, termination and guardrail
// hooks of the agent loop. Plugins are built with standard Go:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o x.wasm .
//
// A plugin registers its handlers in init() (a c-shared module never runs
// main) and imports the export package of its kind for its side effect:
//
//	import _ "github.com/agenthost/agenthost/plugins/sdk/exports/mcptool"
//
//	type Args struct {
//		Expression string `json:"expression" description:"e.g. 2*(3+4)"`
//	}
//
//	func init() {
//		sdk.AddTool("calc", "Evaluate arithmetic", func(a Args) (sdk.CallToolResult, error) {
//			return sdk.Text("14"), nil
//		})
//	}
//
// What it does: derives input schemas from Go structs (SchemaOf), decodes
// arguments and encodes results in the exact JSON shapes of ABI.md, and wraps
// the host functions (log, progress, config, KV, create_message, HTTP).
//
// Work done in init is done once for a pre-initialised plugin (the default;
// agent.toml `preinit`): its snapshot starts every instance where init ended. So
// the SDK builds the JSON codecs every tool call uses there (AddTool, warm),
// and a plugin should do its own first-use setup (tables, compiled patterns,
// codecs of its types) in init too, as long as it calls no host function.
// The runtime's random state is frozen with it (every fresh instance draws
// the same math/rand sequence): take ids and nonces from crypto/rand.
//
// What it must not do: import the host side (sandbox/, loop/, host/) — the
// shapes here are redeclared so a plugin links nothing of the host — or
// keep state between calls that the host does not promise (an instance may
// be discarded after any failure; use the KV store for what must persist).
//
// The pure parts (types, schemas, dispatch) build on every platform and are
// tested with plain `go test`; files touching the Extism kernel carry
// //go:build wasip1, and the host functions have stubs elsewhere that return
// ErrNotInWasm.
package sdk
