"""Long-running servers and their client: the warm search server the hooks talk to, and the MCP server."""
