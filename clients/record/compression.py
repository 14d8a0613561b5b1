"""Compression of a v2 batch's records section: gzip, lz4 (frame format) and zstd, by Kafka's
codec numbers; bad input comes back as CorruptBatchError, never as a library's own exception."""
from __future__ import annotations

import gzip
import threading
import zlib

import lz4.frame
import zstandard

from clients.record.batch_header import CorruptBatchError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
_BY_NAME = {"none": NONE, "gzip": GZIP, "lz4": LZ4, "zstd": ZSTD}
_SUPPORTED = tuple(_BY_NAME)

# Kafka's defaults: gzip uses Deflater's default level 6, zstd level 3.
GZIP_LEVEL = 6
ZSTD_LEVEL = 3

# zstandard's contexts are not safe to share between threads (gRPC handlers, to_thread workers),
# so each thread keeps its own and reuses it: building one per call costs more than small batches.
_local = threading.local()


def codec_from_name(name: str) -> int:
    """'none', 'gzip', 'lz4' or 'zstd' (any case) to Kafka's codec number."""
    key = name.strip().lower()
    if key == "snappy":
        raise ValueError("compression type 'snappy' is not supported by kraft; "
                         f"use one of: {', '.join(_SUPPORTED)}")
    if key not in _BY_NAME:
        raise ValueError(f"unknown compression type {name!r}; use one of: {', '.join(_SUPPORTED)}")
    return _BY_NAME[key]


def _zstd_compressor() -> zstandard.ZstdCompressor:
    cctx = getattr(_local, "cctx", None)
    if cctx is None:
        cctx = _local.cctx = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    return cctx


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    dctx = getattr(_local, "dctx", None)
    if dctx is None:
        dctx = _local.dctx = zstandard.ZstdDecompressor()
    return dctx


def compress(codec: int, data: bytes) -> bytes:
    if codec == NONE:
        return bytes(data)
    if codec == LZ4:
        # Kafka's writer uses independent blocks and no content size; Java's reader expects that.
        return lz4.frame.compress(data, block_linked=False, store_size=False)
    if codec == ZSTD:
        return _zstd_compressor().compress(data)
    if codec == GZIP:
        # mtime=0 keeps the output deterministic (same records, same bytes, same CRC).
        return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)
    raise ValueError(f"cannot compress with codec {codec} ({NAMES.get(codec, 'unknown')}); "
                     f"use one of: {', '.join(_SUPPORTED)}")


def decompress(codec: int, data: bytes) -> bytes:
    """Inflate a records section; raises CorruptBatchError on bad data or an unsupported codec."""
    try:
        if codec == LZ4:
            return lz4.frame.decompress(data)
        if codec == ZSTD:
            # Streamed frames (Kafka's Java producer, ours) carry no content size, so stream out.
            dobj = _zstd_decompressor().decompressobj()
            out = dobj.decompress(data)
            if not dobj.eof:
                raise CorruptBatchError("truncated zstd frame in the records section")
            return out
        if codec == GZIP:
            return gzip.decompress(data)
        if codec == NONE:
            return bytes(data)
    except CorruptBatchError:
        raise
    except (RuntimeError, OSError, EOFError, zlib.error, zstandard.ZstdError, ValueError) as exc:
        raise CorruptBatchError(f"cannot decompress {NAMES[codec]} records section: {exc}") from None
    raise CorruptBatchError(f"unsupported compression codec {codec} "
                            f"({NAMES.get(codec, 'unknown')}) in batch attributes")
