"""HTTP/1.1 written by hand over a loopback socket: what a client that does not play by the
rules sends (a head never finished, a body declared and never sent, bytes one at a time),
which no well-behaved client library will send."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

# The longest any test waits for the server to answer or hang up: generous on a busy
# machine, and far shorter than a connection left open indefinitely.
PATIENCE_SECONDS = 30.0


@dataclass(frozen=True)
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes


class RawConnection:
    """One TCP connection to an HTTP listener."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, base_url: str) -> RawConnection:
        url = urlsplit(base_url)
        reader, writer = await asyncio.open_connection(url.hostname, url.port)
        return cls(reader, writer)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send_head(
        self, method: str, path: str, headers: Mapping[str, str], *, finished: bool = True
    ) -> None:
        """The request line and `headers`; without `finished`, the blank line that ends a
        head is left out."""
        lines = [f"{method} {path} HTTP/1.1", "host: capreg.test"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        await self.send(("\r\n".join(lines) + "\r\n" + ("\r\n" if finished else "")).encode())

    async def response(self, seconds: float = PATIENCE_SECONDS) -> RawResponse:
        """The next response; TimeoutError when none comes within `seconds`."""
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), seconds)
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        body = await asyncio.wait_for(self.reader.readexactly(length), seconds)
        return RawResponse(int(status_line.split(" ")[1]), headers, body)

    async def closed_by_server(self, seconds: float = PATIENCE_SECONDS) -> bool:
        """Whether the server hangs up within `seconds` (anything it sends first is read
        and dropped)."""
        try:
            async with asyncio.timeout(seconds):
                while await self.reader.read(65536):
                    pass
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
        return True

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()
