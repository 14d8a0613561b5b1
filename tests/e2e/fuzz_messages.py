"""Hypothesis strategies for any request of our gRPC services, built from the protobuf
descriptors: well-typed fields biased to the edges of their types, names that exist, sizes past
every limit; and the calls that send them (as messages or as raw bytes) and judge the answers."""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import FieldDescriptor as F
from hypothesis import strategies as st

from clients.record.codec import encode_batch

INT_RANGES = {
    F.TYPE_INT32: (-(1 << 31), (1 << 31) - 1),
    F.TYPE_SINT32: (-(1 << 31), (1 << 31) - 1),
    F.TYPE_INT64: (-(1 << 63), (1 << 63) - 1),
    F.TYPE_SINT64: (-(1 << 63), (1 << 63) - 1),
    F.TYPE_UINT32: (0, (1 << 32) - 1),
    F.TYPE_UINT64: (0, (1 << 64) - 1),
}
# Names the node knows (so requests reach real partitions, groups and brokers) and names it must
# refuse; the canary topic is deliberately absent, so the fuzz never names it.
KNOWN_NAMES = [
    "fuzz",
    "fuzz.t",
    "__consumer_offsets",
    "__cluster_metadata",
    "g",
    "member",
    "",
    "-",
    ".",
    "..",
    "a/b",
    "é",
    "\x00",
]
BIG = [300, 33_000, 1 << 20, (2 << 20) + 1]


def ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    edges = sorted(
        {
            v
            for v in (
                lo,
                hi,
                0,
                1,
                -1,
                -2,
                2,
                100,
                1 << 15,
                (1 << 15) - 1,
                -(1 << 15),
                1 << 31,
                (1 << 31) - 1,
                -(1 << 31),
            )
            if lo <= v <= hi
        }
    )
    return st.one_of(
        st.sampled_from(edges),
        st.integers(lo, hi),
        st.integers(-5, 70_000).filter(lambda v: lo <= v <= hi),
    )


def strings(big: bool) -> st.SearchStrategy[str]:
    small = st.one_of(st.sampled_from(KNOWN_NAMES), st.text(max_size=24))
    return st.one_of(small, st.sampled_from(BIG).map(lambda n: "x" * n)) if big else small


def blobs(big: bool) -> st.SearchStrategy[bytes]:
    batch = encode_batch([(b"k", b"v", (), 1_700_000_000_000)])
    small = st.one_of(st.binary(max_size=64), st.just(batch), st.just(batch * 3))
    return st.one_of(small, st.sampled_from(BIG).map(lambda n: b"\x01" * n)) if big else small


def message(descriptor, depth: int = 0, big: bool = True) -> st.SearchStrategy:
    """A message of `descriptor` with random fields; nested messages to depth 3. Values past
    every size limit (`big`) only near the top and not in long lists: a request stays a few MB,
    about what gRPC lets through, and quick to build."""
    cls = message_factory.GetMessageClass(descriptor)
    fields = {}
    for fd in descriptor.fields:
        value = _field(fd, depth, big and depth <= 1)
        if value is None:
            continue
        fields[fd.name] = value
    return st.fixed_dictionaries({}, optional=fields).map(lambda kw: _build(cls, kw))


def _build(cls, kw: dict):
    out = cls()
    for name, value in kw.items():
        fd = out.DESCRIPTOR.fields_by_name[name]
        target = getattr(out, name)
        if _is_map(fd):
            for k, v in value:
                if fd.message_type.fields_by_name["value"].message_type is not None:
                    target[k].CopyFrom(v)
                else:
                    target[k] = v
        elif fd.is_repeated:
            target.extend(value)
        elif fd.message_type is not None:
            target.CopyFrom(value)
        else:
            setattr(out, name, value)
    return out


def _is_map(fd) -> bool:
    return fd.is_repeated and fd.message_type is not None and fd.message_type.GetOptions().map_entry


def _scalar(fd, depth: int, big: bool) -> st.SearchStrategy | None:
    if fd.message_type is not None:
        return None if depth >= 3 else message(fd.message_type, depth + 1, big)
    if fd.type in INT_RANGES:
        return ints(*INT_RANGES[fd.type])
    if fd.type == F.TYPE_BOOL:
        return st.booleans()
    if fd.type == F.TYPE_STRING:
        return strings(big)
    if fd.type == F.TYPE_BYTES:
        return blobs(big)
    if fd.type == F.TYPE_ENUM:
        return st.one_of(
            st.sampled_from([v.number for v in fd.enum_type.values]),
            ints(-(1 << 31), (1 << 31) - 1),
        )
    if fd.type in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        return st.floats(allow_nan=True, width=32 if fd.type == F.TYPE_FLOAT else 64)
    return None


def _field(fd, depth: int, big: bool) -> st.SearchStrategy | None:
    if _is_map(fd):
        key = _scalar(fd.message_type.fields_by_name["key"], depth, big)
        value = _scalar(fd.message_type.fields_by_name["value"], depth, big)
        return None if key is None or value is None else st.lists(st.tuples(key, value), max_size=3)
    one = _scalar(fd, depth, big)
    if one is None:
        return None
    if fd.is_repeated:
        many = _scalar(fd, depth, big=False) if depth == 0 else None
        return st.one_of(
            st.lists(one, max_size=3),
            st.lists(many, min_size=40, max_size=60) if many is not None else st.just([]),
        )
    return one


@dataclass(frozen=True)
class Method:
    service: str  # full name, kraft.broker.v1.Broker
    name: str
    request: type
    response: type

    @property
    def path(self) -> str:
        return f"/{self.service}/{self.name}"

    def __str__(self) -> str:
        return f"{self.service.rsplit('.', 1)[1]}.{self.name}"


def methods(pb2_module, service: str) -> list[Method]:
    descriptor = pb2_module.DESCRIPTOR.services_by_name[service]
    return [
        Method(
            descriptor.full_name,
            m.name,
            message_factory.GetMessageClass(m.input_type),
            message_factory.GetMessageClass(m.output_type),
        )
        for m in descriptor.methods
    ]


# A handler that raised (INTERNAL, UNKNOWN) or a node that went away (UNAVAILABLE) is a finding;
# a parked request past its deadline, a refused unparsable or oversized one is not.
BAD_STATUSES = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.UNAVAILABLE}
UNKNOWN_SERVER_ERROR = -1


def findings(response) -> list[str]:
    """UNKNOWN_SERVER_ERROR anywhere in an answer, and error codes that come without a
    message, with the path of the field."""
    out = []

    def walk(msg, where: str) -> None:
        names = msg.DESCRIPTOR.fields_by_name
        if "error_code" in names:
            code = msg.error_code
            if code == UNKNOWN_SERVER_ERROR:
                out.append(f"{where}: UNKNOWN_SERVER_ERROR {getattr(msg, 'error_message', '')!r}")
            elif code and "error_message" in names and not msg.error_message:
                out.append(f"{where}: error {code} without a message")
        for fd in msg.DESCRIPTOR.fields:
            if fd.message_type is None or _is_map(fd):
                continue
            if fd.is_repeated:
                for i, item in enumerate(getattr(msg, fd.name)):
                    walk(item, f"{where}.{fd.name}[{i}]")
            elif msg.HasField(fd.name):
                walk(getattr(msg, fd.name), f"{where}.{fd.name}")

    walk(response, "")
    return out


def send_all(channel: grpc.Channel, method: Method, requests: list, timeout_s: float) -> list[str]:
    """Send every request at once (message or raw bytes); the findings, one line each."""
    typed = channel.unary_unary(
        method.path,
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=method.response.FromString,
    )
    raw = channel.unary_unary(method.path)
    futures = [
        (r, (raw if isinstance(r, bytes) else typed).future(r, timeout=timeout_s)) for r in requests
    ]
    out = []
    for request, future in futures:
        try:
            response = future.result()
        except grpc.RpcError as exc:
            if exc.code() in BAD_STATUSES:
                out.append(f"{method}: {exc.code().name} {exc.details()!r} for {_show(request)}")
            continue
        if isinstance(response, bytes):
            response = method.response.FromString(response)
        out.extend(f"{method}{where} for {_show(request)}" for where in findings(response))
    return out


def _show(request) -> str:
    text = repr(request) if isinstance(request, bytes) else str(request).replace("\n", " ")
    return text if len(text) < 300 else text[:300] + f"... ({len(text)} chars)"
