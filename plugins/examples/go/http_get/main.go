//go:build wasip1

// Command http_get is an example tool plugin (mcp ABI): it GETs a URL through
// the host's HTTP function. The manifest must list the hosts it may reach in
// permissions.allowed_hosts; any other host ends the call with
// "host H not in allowed_hosts".
package main

import (
	"fmt"
	"unicode/utf8"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/mcptool"
)

func main() {}

type getArgs struct {
	URL      string `json:"url" description:"http or https URL; its host must be in allowed_hosts"`
	MaxBytes int    `json:"max_bytes,omitempty" description:"truncate the body after this many bytes (default 65536)"`
}

const defaultMaxBytes = 64 << 10

func init() {
	sdk.AddTool("http_get", "Fetch a URL with HTTP GET and return its body (status >= 400 is an error).", func(a getArgs) (sdk.CallToolResult, error) {
		if a.URL == "" {
			return sdk.ErrorText("url is required"), nil
		}
		status, body, err := sdk.HTTPGet(a.URL)
		if err != nil {
			return sdk.ErrorText(fmt.Sprintf("GET %s: %v", a.URL, err)), nil
		}
		limit := a.MaxBytes
		if limit <= 0 {
			limit = defaultMaxBytes
		}
		text := string(body)
		if len(body) > limit {
			cut := limit
			for cut > 0 && !utf8.RuneStart(body[cut]) {
				cut--
			}
			text = fmt.Sprintf("%s\n[truncated: %d of %d bytes]", body[:cut], cut, len(body))
		}
		if status >= 400 {
			return sdk.ErrorText(fmt.Sprintf("GET %s: status %d: %s", a.URL, status, text)), nil
		}
		return sdk.Text(text), nil
	})
}
