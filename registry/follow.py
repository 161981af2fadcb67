"""A replica on a shared store follows the other replicas' changes.

It applies every announced change (PostgreSQL NOTIFY), and checks the store's generation at
least every `interval` seconds, which also covers announcements lost with a dropped
connection. Catching up embeds nothing: the writing replica stored the vectors with the
catalog.
"""

from __future__ import annotations

import logging
import threading

from registry.errors import NotReady
from registry.store import SharedStore
from registry.writer import Writer

logger = logging.getLogger(__name__)


class Follower:
    """A thread that keeps `writer`'s snapshot up with `store`."""

    def __init__(self, store: SharedStore, writer: Writer, interval: float) -> None:
        self._store = store
        self._writer = writer
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="capreg-follow", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._store.wait_for_change(self._interval)
            if self._stop.is_set():
                return
            try:
                self._writer.catch_up()
            except NotReady:
                continue
            except Exception:  # the next round retries; a follower must not die
                logger.exception("catching up with the store failed")
                self._stop.wait(self._interval)
