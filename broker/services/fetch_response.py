"""The serialized FetchResponse, built by hand around the fetched records: what the Fetch handler
sends, so record bytes go from the segment file into the answer with one copy in user space."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Union

from clients.record.buffer_view import bytes_written_in_place
from kraft.log.file_slice import FileSlice

Records = Union[bytes, FileSlice]

# Protobuf tags (field number << 3 | 2, length-delimited) of the fields built here. protobuf
# serializes fields in number order, so each partition's `records` (field 8) written after the
# others gives the very bytes SerializeToString would; only a read_committed answer's
# `aborted_transactions` (9) then comes before it, which every protobuf parser accepts.
_RECORDS_TAG = 8 << 3 | 2  # FetchPartitionResponse.records
_PARTITIONS_TAG = 2 << 3 | 2  # FetchTopicResponse.partitions
_TOPICS_TAG = 3 << 3 | 2  # FetchResponse.topics


def varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field_size(n: int) -> int:
    """Bytes a length-delimited field of `n` bytes takes (one-byte tag, length, body)."""
    return 1 + len(varint(n)) + n


def serialize_fetch_response(
    topics: Sequence[tuple[bytes, Sequence[tuple[bytes, Records]]]],
) -> bytes:
    """`topics`: (a FetchTopicResponse serialized without partitions, [(a FetchPartitionResponse
    serialized without records, its records)]). The bytes grpcio sends, of the final size,
    written in place; the records of a FileSlice read straight into them: one copy of a fetched
    byte in user space, from the page cache."""
    sizes, total = [], 0
    for topic_head, partitions in topics:
        part_sizes = [
            len(head) + (_field_size(len(records)) if len(records) else 0)
            for head, records in partitions
        ]
        topic_size = len(topic_head) + sum(_field_size(n) for n in part_sizes)
        sizes.append((topic_size, part_sizes))
        total += _field_size(topic_size)

    def write(view: memoryview) -> None:
        at = 0

        def put(data) -> None:
            nonlocal at
            view[at : at + len(data)] = data
            at += len(data)

        for (topic_head, partitions), (topic_size, part_sizes) in zip(topics, sizes):
            put(bytes((_TOPICS_TAG,)) + varint(topic_size) + topic_head)
            for (head, records), part_size in zip(partitions, part_sizes):
                put(bytes((_PARTITIONS_TAG,)) + varint(part_size) + head)
                n = len(records)
                if not n:
                    continue
                put(bytes((_RECORDS_TAG,)) + varint(n))
                if isinstance(records, FileSlice):
                    records.read_into(view[at : at + n])
                    at += n
                else:
                    put(records)
        assert at == total, (at, total)

    return bytes_written_in_place(total, write)
