package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// ConfigDigest is the sha256 (hex) of what the plugin was configured with beyond its
// module: its permissions (with their config values, which for a JavaScript tool hold
// its bundle), its args and its declared tools. With Digest it names what produces the
// plugin's results: the tool-result cache keys by both, so a rebuilt module or a changed
// configuration misses.
func (p *Plugin) ConfigDigest() string {
	b, _ := json.Marshal(struct {
		Perms Permissions
		Args  []string
		Tools []ToolSpec
	}{p.perms, p.args, p.Tools()})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
