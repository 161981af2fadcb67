"""The HTTP/JSON transport: the gRPC service's RPCs over HTTP, through the same servicer."""
