"""Headers every HTTP answer carries: how a browser may use it (never inside another site's
frame; the console's content policy, which a `<meta>` tag cannot fully state), and
`connection: close` when the answer came before the request's body was read."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The console's policy (the same as its page's <meta> tag, which cannot carry
# frame-ancestors): everything from this server, plots from blob: URLs, no form submission.
CONSOLE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
# Everything else is data: nothing in it may run, load or be framed.
DATA_POLICY = "default-src 'none'; frame-ancestors 'none'"
CONSOLE_PATHS = ("/", "/console/")


def _policy(path: str) -> bytes:
    console = path == CONSOLE_PATHS[0] or path.startswith(CONSOLE_PATHS[1])
    return (CONSOLE_POLICY if console else DATA_POLICY).encode()


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
        policy = _policy(scope["path"])

        async def receive_counted() -> Message:
            nonlocal unread
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                unread = False
            return message

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    *message.get("headers", ()),
                    (b"content-security-policy", policy),
                    (b"x-frame-options", b"DENY"),
                    (b"x-content-type-options", b"nosniff"),
                ]
                if unread:
                    headers.append((b"connection", b"close"))
                message = {**message, "headers": headers}
            await send(message)

        await self._app(scope, receive_counted, send_with_headers)
