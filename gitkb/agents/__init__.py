"""What coding agents are handed: gitkb's Agent Skills, and the MCP registration blocks."""
