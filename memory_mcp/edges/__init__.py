"""Translation to the outside: the MCP stdio server, the CLI and their text renderings."""
