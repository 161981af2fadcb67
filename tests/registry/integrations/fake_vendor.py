"""A local stand-in for a vendor's model endpoint, for the official SDK clients to talk to.

Reason for the fake: the real Anthropic and OpenAI APIs need the network and paid keys, which
tests never have. Everything on our side is real: the SDK client builds and sends each request
over HTTP, and parses each answer; the fake records what arrived and answers with what a
scripted turn returns.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Endpoint:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


@contextmanager
def fake_vendor(turns: list[Turn]) -> Iterator[Endpoint]:
    """An HTTP server on 127.0.0.1:0 answering the n-th POST with `turns[n](request body)`;
    a POST beyond the script is answered 500 (the SDK clients are built without retries)."""
    pending = list(turns)
    lock = threading.Lock()
    endpoint = Endpoint(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                endpoint.requests.append(body)
                endpoint.paths.append(self.path)
                turn = pending.pop(0) if pending else None
            status, answer = (200, turn(body)) if turn else (500, {"error": "unscripted"})
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the requests are recorded on the endpoint instead."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    endpoint.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
