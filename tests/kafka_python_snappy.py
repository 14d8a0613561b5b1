"""kafka-python's snappy codec (its own xerial framing and detection) wants python-snappy, which is
not a test dependency: this gives it python-snappy's two calls over cramjam's raw snappy."""

from __future__ import annotations

import cramjam
import kafka.codec


class RawSnappy:
    @staticmethod
    def compress(data) -> bytes:
        return bytes(cramjam.snappy.compress_raw(bytes(data)))

    @staticmethod
    def decompress(data) -> bytes:
        return bytes(cramjam.snappy.decompress_raw(bytes(data)))


def give_kafka_python_snappy(monkeypatch) -> None:
    monkeypatch.setattr(kafka.codec, "snappy", RawSnappy)
