package mcpclient

import (
	"context"
	"fmt"
)

// Ready makes sure the server answers before a run offers its tools (prepare = true in
// its [[mcp_servers]] entry; loop.Runtime): it starts a command again when it died since
// the last use and pings it (MCP ping), within the entry's timeout. A server reached
// with each user's own token has no one connection to make ready: an error.
func (s *Server) Ready(ctx context.Context) error {
	if s.cfg.PerUser != nil {
		return fmt.Errorf("mcp server %q is reached with each user's own account: no one connection to prepare", s.cfg.Name)
	}
	session, _, err := s.live(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := session.Ping(cctx, nil); err != nil {
		return fmt.Errorf("mcp server %q does not answer: %w", s.cfg.Name, err)
	}
	return nil
}
