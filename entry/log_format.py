"""How a node's log lines look: `text` (one line, human) or `json` (one object per line, for log
shippers), chosen by --log-format or KRAFT_LOG_FORMAT; the start line uses the same format."""

from __future__ import annotations

import datetime
import json
import logging
import sys

FORMATS = ("text", "json")
ENV = "KRAFT_LOG_FORMAT"
TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """{"time", "level", "logger", "message"[, "exception"]}: one line, UTC, milliseconds."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "time": _utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc)


def _utc(created: float) -> str:
    return (
        datetime.datetime.fromtimestamp(created, datetime.UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def configure(log_format: str, debug: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT))
    logging.basicConfig(level=logging.DEBUG if debug else logging.INFO, handlers=[handler])


def announcer(log_format: str):
    """The node's one start line (and its stop notice) on stdout, in the log's format."""

    def announce(line: str) -> None:
        if log_format == "json":
            line = json.dumps(
                {
                    "time": _utc(datetime.datetime.now().timestamp()),
                    "level": "INFO",
                    "logger": "kraft",
                    "message": line,
                }
            )
        print(line, flush=True)

    return announce
