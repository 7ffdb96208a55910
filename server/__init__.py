"""test_patch MCP server."""
