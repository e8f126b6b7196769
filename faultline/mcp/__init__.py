"""MCP servers and clients: NIKA's agent tool surface over the lab (`lab_server`), the docs index."""
