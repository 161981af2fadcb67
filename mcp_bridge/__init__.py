"""The MCP bridge: discovery tools for any MCP client, answered by the registry over gRPC."""
