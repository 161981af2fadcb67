"""Logs an operator can search: a request id on every record of a call, optional JSON lines,
and the audit trail (who changed which catalog, and who failed to authenticate)."""

from __future__ import annotations

import contextvars
import json
import logging
import time
from typing import Any

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
AUDIT = logging.getLogger("capreg.audit")
# Fields of a record that are the logging module's own, not data someone attached.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class RequestIdFilter(logging.Filter):
    """Stamps every record with the id of the request being served (empty outside one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id and any extras."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def audit(event: str, **fields: object) -> None:
    """One audit record: `event` (register, delete, auth_failure) and what it concerned."""
    AUDIT.info(
        "%s %s",
        event,
        " ".join(f"{k}={v}" for k, v in fields.items()),
        extra={"event": event, **fields},
    )
