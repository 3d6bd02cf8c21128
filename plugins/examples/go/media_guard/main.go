//go:build wasip1

// Command media_guard is an example guardrail (kind "guardrail", export guard) on media
// parts: it blocks an input or a tool result that carries a part of a refused type, or
// a part larger than a size, from what the host tells it of each part (GuardInput.Media:
// type, sniffed MIME type, size, name; never the bytes). Its config:
//
//	refuse    comma-separated part types ("audio") or MIME types ("application/pdf",
//	          "image/*") to block; default none
//	max_bytes the largest part let through; default 0, no bound
//
// Text, and the stages without media (tool_args, output), are allowed.
package main

import (
	"fmt"
	"path"
	"strings"

	"github.com/agenthost/agenthost/plugins/sdk"
	_ "github.com/agenthost/agenthost/plugins/sdk/exports/guardrail"
)

func main() {}

func init() {
	sdk.OnGuard(func(in sdk.GuardInput) (sdk.GuardResult, error) {
		maxBytes, err := sdk.ConfigInt("max_bytes", 0)
		if err != nil {
			return sdk.GuardResult{}, err
		}
		refuse, _ := sdk.Config("refuse")
		for _, m := range in.Media {
			if rule := refused(refuse, m); rule != "" {
				return sdk.GuardResult{Action: sdk.Block, Reason: fmt.Sprintf("%s %s (%s) is refused (%s)", m.Type, label(m), m.MimeType, rule)}, nil
			}
			if maxBytes > 0 && m.Size > int64(maxBytes) {
				return sdk.GuardResult{Action: sdk.Block, Reason: fmt.Sprintf("%s %s is %d bytes, over %d", m.Type, label(m), m.Size, maxBytes)}, nil
			}
		}
		return sdk.GuardResult{Action: sdk.Allow}, nil
	})
}

// refused is the rule of refuse that matches m ("audio", "image/*"), or "".
func refused(refuse string, m sdk.MediaInfo) string {
	for _, rule := range strings.Split(refuse, ",") {
		rule = strings.TrimSpace(rule)
		if rule == "" {
			continue
		}
		if rule == m.Type {
			return rule
		}
		if ok, _ := path.Match(rule, m.MimeType); ok {
			return rule
		}
	}
	return ""
}

func label(m sdk.MediaInfo) string {
	if m.Name != "" {
		return fmt.Sprintf("%q", m.Name)
	}
	return "part"
}
