"""ApiVersions 0-3: the versions of every API served (Kafka 3.x's maxima, see apis.py)."""

from __future__ import annotations

import struct

from broker.kafka import codec
from broker.kafka.answer import Answer
from clients.errors import ErrorCode

API_KEY = 18
ORDERED = False


def unsupported(ranges) -> bytes:
    """ApiVersions v0's answer, UNSUPPORTED_VERSION with the ranges (KIP-511): a client that
    asked in a newer version retries in the highest one served."""
    out = [struct.pack(">hi", ErrorCode.UNSUPPORTED_VERSION, len(ranges))]
    out += [struct.pack(">hhh", *r) for r in ranges]
    return b"".join(out)


async def handle(ctx, request, started):
    ranges = ctx.served
    return Answer.of(
        codec.encode_response(
            API_KEY,
            ctx.version,
            {
                "error_code": 0,
                "throttle_time": 0,
                "api_keys": [
                    {"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in ranges
                ],
                "finalized_features_epoch": -1,
            },
        )
    )
