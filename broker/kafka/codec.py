"""Kafka message bodies through kio: requests decoded by its native reader, cold responses
encoded by its writer from plain dicts. Its schema modules load on first use (importing all of
them takes seconds); `warm_up` loads the common ones off the event loop."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import importlib
import io
import logging
import threading
import types
import typing
from functools import cache

from broker.kafka.apis import APIS
from broker.kafka.framing import FrameError

log = logging.getLogger(__name__)


# One import of kio's modules at a time: the warm-up thread and the loop importing the same
# modules at once deadlocked in importlib (and the loop waits at most one module for it).
_IMPORTS = threading.RLock()


@cache
def _entity(api_key: int, version: int, kind: str) -> type:
    with _IMPORTS:
        module = importlib.import_module(f"kio.schema.{APIS[api_key].name}.v{version}.{kind}")
    wanted = "request" if kind == "request" else "response"
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and getattr(value, "__type__", None) is not None
            and getattr(value.__type__, "name", "") == wanted
        ):
            return value
    raise LookupError(f"kio has no {wanted} in {module.__name__}")


@cache
def _reader(api_key: int, version: int):
    with _IMPORTS:
        from kio.serial import entity_reader

        return entity_reader(_entity(api_key, version, "request"))


@cache
def _writer(api_key: int, version: int):
    with _IMPORTS:
        from kio.serial import entity_writer

        return entity_writer(_entity(api_key, version, "response"))


def warm_up(keys_versions) -> None:
    """Load the schema modules of these (api key, version)s: blocking, for a thread. A module
    that fails to load is left to the request that needs it (and fails only that one)."""
    for key, version in keys_versions:
        try:
            _reader(key, version)
            _writer(key, version)
        except Exception:
            log.exception("kio: cannot load the schemas of API %d v%d", key, version)


def decode_request(api_key: int, version: int, body):
    """The request body (bytes or a read-only view) as kio's dataclass. Bytes after the
    message are ignored, as Kafka does (librdkafka 2.16's Metadata v12 sends 3 of them)."""
    from broker.kafka.guard import check_entity

    check_entity(_entity(api_key, version, "request"), body, 0, len(body))
    try:
        message, _size = _reader(api_key, version)(body, 0)
    except FrameError:
        raise
    except Exception as exc:  # noqa: BLE001 (kio raises its own errors, IndexError, ValueError)
        raise FrameError(f"{APIS[api_key].name} v{version}: {type(exc).__name__}: {exc}") from None
    return message


def encode_response(api_key: int, version: int, values: dict) -> bytes:
    """The response body for this version from `values`: a field the version lacks is dropped,
    one it has that `values` lacks is its default, or Kafka's zero value for its type."""
    cls = _entity(api_key, version, "response")
    out = io.BytesIO()
    _writer(api_key, version)(out, make(cls, values))
    return out.getvalue()


def make(cls: type, values: dict):
    """An instance of a kio dataclass from a dict; nested entities from dicts or lists of them."""
    kwargs = {}
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in values and values[f.name] is None and not _nullable(hints[f.name]):
            # Null where this version has no null (protocol_name before JoinGroup v7): Kafka's
            # zero value for the type instead.
            kwargs[f.name] = _zero(hints[f.name], f.metadata.get("kafka_type", ""))
        elif f.name in values:
            kwargs[f.name] = _convert(
                hints[f.name], values[f.name], f.metadata.get("kafka_type", "")
            )
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            kwargs[f.name] = _zero(hints[f.name], f.metadata.get("kafka_type", ""))
    return cls(**kwargs)


@cache
def _hints(cls: type) -> dict:
    return typing.get_type_hints(cls)


def _nullable(tp) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(
        None
    ) in typing.get_args(tp)


def _strip_optional(tp):
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def _convert(tp, value, kafka_type: str = ""):
    if value is None:
        return None
    tp = _strip_optional(tp)
    if typing.get_origin(tp) is tuple:
        item = typing.get_args(tp)[0]
        return tuple(_convert(item, v, kafka_type) for v in value)
    if kafka_type.startswith("timedelta"):
        return (
            value
            if isinstance(value, datetime.timedelta)
            else datetime.timedelta(milliseconds=int(value))
        )
    if kafka_type.startswith("datetime"):
        from kio.serial.readers import tz_aware_from_i64

        return tz_aware_from_i64(int(value))
    if dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return make(tp, value)
    if isinstance(tp, type):
        if issubclass(tp, enum.Enum):
            return tp(int(value))
        if tp in (int, str, bool, bytes):
            return value
        if issubclass(tp, int) and not isinstance(value, tp):
            return tp(value)
    return value


def _zero(tp, kafka_type: str):
    if kafka_type.startswith("timedelta"):
        return datetime.timedelta(0)
    tp = _strip_optional(tp)
    if typing.get_origin(tp) is tuple:
        return ()
    if isinstance(tp, type):
        if issubclass(tp, enum.Enum):
            return tp(0)
        if issubclass(tp, bool):
            return False
        if issubclass(tp, int):
            return tp(0)
        if issubclass(tp, str):
            return tp("")
        if issubclass(tp, bytes):
            return b""
    if kafka_type == "uuid":
        return None
    return None
