"""compression.type on a topic: the leader rewrites each batch whose codec differs from the
topic's (Kafka's LogValidator does the same); 'producer' keeps the producer's batches as sent."""

from __future__ import annotations

from clients.record.batch_header import TIMESTAMP_TYPE_MASK, BatchHeader
from clients.record.codec import decode_batch, encode_batch

# compression.type value -> Kafka's codec number; None keeps what the producer sent.
TOPIC_CODECS = {"producer": None, "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def recompress(
    buf: bytes, headers: list[tuple[int, BatchHeader]], compression_type: str
) -> bytes | None:
    """The request's batches with every data batch in the topic's codec, or None when nothing
    needs rewriting. Keys, values, headers, timestamps, producer id, epoch and sequence are
    kept; control batches are left as they are. `headers` are validate_records' (position,
    header) pairs for `buf`, whose records the validator has already walked."""
    codec = TOPIC_CODECS[compression_type]
    if codec is None or all(h.compression == codec or h.is_control for _, h in headers):
        return None
    out = []
    for pos, header in headers:
        batch = bytes(buf[pos : pos + header.size])
        if header.compression == codec or header.is_control:
            out.append(batch)
            continue
        _, records = decode_batch(batch, verify_crc=False)
        out.append(
            encode_batch(
                [(r.key, r.value, r.headers, r.timestamp) for r in records],
                compression=codec,
                partition_leader_epoch=header.partition_leader_epoch,
                producer_id=header.producer_id,
                producer_epoch=header.producer_epoch,
                base_sequence=header.base_sequence,
                is_transactional=header.is_transactional,
                log_append_time=bool(header.attributes & TIMESTAMP_TYPE_MASK),
            )
        )
    return b"".join(out)
