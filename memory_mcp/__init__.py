"""memory-mcp: local, git-friendly long-term memory for AI agents, served over MCP (stdio)."""

__version__ = "0.1.0"
