# surface/server tests: headless Chromium for the live page test, and Node 20 with the
# official AG-UI client (@ag-ui/client, pinned by package-lock.json) for the protocol test.
apt_install chromium
command -v node >/dev/null || apt_install nodejs
command -v npm >/dev/null || apt_install npm
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' 2>/dev/null; then
  echo "deps: surface/server needs Node 20 or newer (found $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
(cd surface/server/testdata/agui-client && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
# The official A2A JavaScript client (@a2a-js/sdk), pinned by package-lock.json, for the A2A
# interop test (1.0 and its 0.3 mode).
(cd surface/server/testdata/a2a-client && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
# cmd/agenthost MCP tests: the official MCP TypeScript SDK (a client) and the reference
# server-everything, pinned by package-lock.json.
(cd cmd/agenthost/testdata/mcp-npm && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
