"""The evaluation plots over HTTP: the PNG names in one results folder, newest first, and each
of those PNGs by name; nothing outside that folder is ever read."""

from __future__ import annotations

import re
from pathlib import Path

import grpc
import orjson
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Route

from registry.auth.authentication import Authenticator
from registry.errors import CapregError
from registry.http.call_context import peer_of
from registry.http.errors import ErrorReply, error_reply
from registry.rpc.status import status_for

# What `capreg eval --plot` writes: plain file names, no path separators, no hidden files.
_PLOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.png$")
# Private: the plots are only answered to a valid key, so no shared cache may keep them.
_NO_STORE = {"cache-control": "private, no-store"}


def _reply(reply: ErrorReply) -> Response:
    return Response(orjson.dumps(reply.body), reply.status, reply.headers, "application/json")


def list_plots(folder: Path | None) -> list[str]:
    """The PNG names directly in `folder`, newest first (ties by name); none without one."""
    if folder is None or not folder.is_dir():
        return []
    root = folder.resolve()
    plots = [
        path
        for path in root.iterdir()
        if _PLOT_NAME.fullmatch(path.name) and path.is_file() and path.resolve().parent == root
    ]
    plots.sort(key=lambda path: (-path.stat().st_mtime_ns, path.name))
    return [path.name for path in plots]


def plot_path(folder: Path | None, name: str) -> Path | None:
    """The file of plot `name` when the listing has it; a link leading out of the folder, a
    path or any other name is None, exactly like a missing one."""
    if folder is None or not _PLOT_NAME.fullmatch(name) or name not in list_plots(folder):
        return None
    return folder.resolve() / name


def results_routes(folder: Path | None, authenticator: Authenticator) -> list[BaseRoute]:
    """`GET /v1/results` and `GET /v1/results/{name}.png` over `folder` (None: no plots). Any
    valid key may read them, as any valid key may read the API's description."""

    def refusal(request: Request) -> Response | None:
        if authenticator.open:
            return None
        metadata = tuple(request.headers.items())
        try:
            authenticator.principal(metadata, peer_of(request.scope))
        except CapregError as exc:
            code, message = status_for(exc)
            return _reply(error_reply(code, message, exc))
        return None

    async def listing(request: Request) -> Response:
        refused = refusal(request)
        if refused is not None:
            return refused
        return Response(orjson.dumps(list_plots(folder)), media_type="application/json")

    async def plot(request: Request) -> Response:
        refused = refusal(request)
        if refused is not None:
            return refused
        name = f"{request.path_params['name']}.png"
        path = plot_path(folder, name)
        if path is None:
            message = f"no evaluation plot named {name!r}; GET /v1/results lists them"
            return _reply(error_reply(grpc.StatusCode.NOT_FOUND, message))
        return FileResponse(path, media_type="image/png", headers=_NO_STORE)

    return [
        Route("/v1/results", listing, methods=["GET"]),
        Route("/v1/results/{name}.png", plot, methods=["GET"]),
    ]
