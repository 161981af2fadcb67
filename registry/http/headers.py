"""Headers an HTTP answer carries beyond its own: `connection: close` when the answer came
before the request's body was read."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


def _declares_body(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False


class FrontHeaders:
    """ASGI middleware adding those headers to every response of `app`.

    A body left unread (a request refused from its headers: no key, no scope, too large, too
    slow) would otherwise be read and discarded before the connection could serve another
    request; closing costs the refused client a new connection and the server nothing."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        unread = _declares_body(scope)

        async def receive_counted() -> Message:
            nonlocal unread
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                unread = False
            return message

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start" and unread:
                headers = [*message.get("headers", ()), (b"connection", b"close")]
                message = {**message, "headers": headers}
            await send(message)

        await self._app(scope, receive_counted, send_with_headers)
