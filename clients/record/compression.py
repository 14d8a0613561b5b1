"""Compression of a v2 batch's records section: gzip, snappy (xerial-framed or raw), lz4 (frame
format) and zstd, by Kafka's codec numbers; bad input comes back as CorruptBatchError, never as a
library's own exception."""

from __future__ import annotations

import gzip
import struct
import threading
import zlib

import cramjam
import lz4.frame
import zstandard

from clients.record.batch_header import CorruptBatchError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
_BY_NAME = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}
_SUPPORTED = tuple(_BY_NAME)

# Kafka's defaults: gzip uses Deflater's default level 6, zstd level 3.
GZIP_LEVEL = 6
ZSTD_LEVEL = 3

# Bound on a decompressed records section when the caller has no better one (clients reading
# what brokers already validated): 64 times Kafka's default max.message.bytes. The broker passes
# the topic's max.message.bytes instead (log_validator.py).
MAX_DECOMPRESSED_SIZE = 64 << 20
# The bounded zstd reader's output buffer: one zstd block is 128 KiB at most.
_SCRATCH_SIZE = 128 << 10
# lz4's first output request: a 16 KiB batch at ratio 4 fits in one.
_LZ4_FIRST_STEP = 256 << 10
# Snappy as Kafka's Java clients write it (snappy-java's SnappyOutputStream): a 16-byte header
# (magic, version 1, compatible version 1), then each 32 KiB of input as one raw snappy block
# after its big-endian int32 length. librdkafka writes one raw snappy block with no header,
# which Java's reader takes too, and so does decompress.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK = 32 << 10
_BLOCK_LENGTH = struct.Struct(">i")

# zstandard's contexts are not safe to share between threads (gRPC handlers, to_thread workers),
# so each thread keeps its own and reuses it: building one per call costs more than small batches.
_local = threading.local()


def codec_from_name(name: str) -> int:
    """'none', 'gzip', 'snappy', 'lz4' or 'zstd' (any case) to Kafka's codec number."""
    key = name.strip().lower()
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
    if codec == SNAPPY:
        return _snappy_xerial(data)
    raise ValueError(
        f"cannot compress with codec {codec} ({NAMES.get(codec, 'unknown')}); "
        f"use one of: {', '.join(_SUPPORTED)}"
    )


class DecompressedTooLarge(CorruptBatchError):
    """A records section that inflates past the caller's bound (a compression bomb, or a batch
    bigger than the topic takes): refused before the output is held in memory."""


def decompress(codec: int, data, max_size: int = MAX_DECOMPRESSED_SIZE) -> bytes:
    """Inflate a records section to at most `max_size` bytes, reading every frame (gzip members,
    lz4 and zstd frames) to its end; raises DecompressedTooLarge past the bound, CorruptBatchError
    on bad, truncated or trailing data or an unsupported codec. Memory stays within about
    `max_size` plus one codec block whatever the input claims."""
    try:
        if codec == SNAPPY:
            return _snappy(data, max_size)
        if codec == LZ4:
            return _inflate_frames(data, max_size, _lz4_frame)
        if codec == ZSTD:
            return _zstd_frames(data, max_size)
        if codec == GZIP:
            return _inflate_frames(data, max_size, _gzip_member)
        if codec == NONE:
            if len(data) > max_size:
                raise DecompressedTooLarge(
                    f"records section of {len(data)} bytes is over the {max_size}-byte bound"
                )
            return bytes(data)
    except CorruptBatchError:
        raise
    except (
        RuntimeError,
        OSError,
        EOFError,
        zlib.error,
        zstandard.ZstdError,
        ValueError,
        cramjam.DecompressionError,
    ) as exc:
        raise CorruptBatchError(
            f"cannot decompress {NAMES[codec]} records section: {exc}"
        ) from None
    raise CorruptBatchError(
        f"unsupported compression codec {codec} "
        f"({NAMES.get(codec, 'unknown')}) in batch attributes; kraft reads "
        f"{', '.join(_SUPPORTED)}"
    )


def _inflate_frames(data, max_size: int, one_frame) -> bytes:
    """Concatenated frames (Java's GZIPInputStream and zstd streams read on across them), each
    inflated by `one_frame(rest, room) -> (output, unused input)` within what is left."""
    if not data:
        raise CorruptBatchError("empty compressed records section")
    parts, total, rest = [], 0, bytes(data)
    while rest:
        out, rest = one_frame(rest, max_size - total)
        total += len(out)
        parts.append(out)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _too_large(room: int) -> DecompressedTooLarge:
    return DecompressedTooLarge(
        f"the records section inflates past the bound ({room} bytes "
        f"were left of it); the batch decompresses to more than the "
        f"limit allows"
    )


def _gzip_member(data: bytes, room: int) -> tuple[bytes, bytes]:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip header and trailer
    out = d.decompress(data, room + 1)
    if len(out) > room:
        raise _too_large(room)
    if not d.eof:
        raise CorruptBatchError("truncated gzip member in the records section")
    return out, d.unused_data


def _lz4_frame(data: bytes, room: int) -> tuple[bytes, bytes]:
    """lz4 allocates all of max_length up front, so ask for output in doubling steps."""
    d = lz4.frame.LZ4FrameDecompressor()
    parts, total, want = [], 0, _LZ4_FIRST_STEP
    while True:
        out = d.decompress(data, max_length=min(want, room + 1 - total))
        data = b""
        total += len(out)
        parts.append(out)
        if total > room:
            raise _too_large(room)
        if d.eof:
            return (parts[0] if len(parts) == 1 else b"".join(parts)), d.unused_data or b""
        if d.needs_input:
            raise CorruptBatchError("truncated lz4 frame in the records section")
        want *= 2


def _zstd_frames(data, max_size: int) -> bytes:
    """decompressobj stops at a frame's end (so truncation and what follows are seen) but has
    no output bound. libzstd enforces a declared content size, so such a frame only needs its
    size checked; frames without one (Java's and any streamed writer's) are first inflated
    through a bounded reader that keeps nothing, then for real: twice the work, bounded memory."""
    if not data:
        raise CorruptBatchError("empty compressed records section")
    dctx = _zstd_decompressor()
    parts, total, rest, measured = [], 0, bytes(data), False
    while rest:
        room = max_size - total
        size = zstandard.frame_content_size(rest)
        if size > room:
            raise _too_large(room)
        if size < 0 and not measured:
            _measure_zstd(dctx, rest, room)  # all the frames left: once is enough
            measured = True
        dobj = dctx.decompressobj()
        out = dobj.decompress(rest)
        if not dobj.eof:
            raise CorruptBatchError("truncated zstd frame in the records section")
        total += len(out)
        parts.append(out)
        rest = dobj.unused_data
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _measure_zstd(dctx, data: bytes, room: int) -> None:
    reader = dctx.stream_reader(data, read_across_frames=True)
    scratch = _scratch()
    seen = 0
    while True:
        n = reader.readinto(scratch)
        if not n:
            return
        seen += n
        if seen > room:
            raise _too_large(room)


def _scratch() -> bytearray:
    buf = getattr(_local, "scratch", None)
    if buf is None:
        buf = _local.scratch = bytearray(_SCRATCH_SIZE)
    return buf


def _snappy_xerial(data) -> bytes:
    data = bytes(data)
    out = [_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1)]
    for i in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[i : i + _XERIAL_BLOCK]))
        out += (_BLOCK_LENGTH.pack(len(block)), block)
    return b"".join(out)


def _snappy(data, max_size: int) -> bytes:
    """Xerial-framed snappy (streams may follow one another, as snappy-java reads them), else
    one raw snappy block. Each block's declared length is checked against what is left of the
    bound before it is inflated (libsnappy writes exactly that many bytes or fails)."""
    if not isinstance(data, bytes):
        data = bytes(data)
    if not data:
        raise CorruptBatchError("empty compressed records section")
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_block(data, max_size)
    parts, total, pos, end = [], 0, 0, len(data)
    while pos < end:
        if data.startswith(_XERIAL_MAGIC, pos):
            if end - pos < _XERIAL_HEADER.size:
                raise _bad_snappy("its xerial header is truncated")
            _, version, _compatible = _XERIAL_HEADER.unpack_from(data, pos)
            if version < 1:
                raise _bad_snappy(
                    f"xerial stream version {version}; Kafka's readers take 1 and later"
                )
            pos += _XERIAL_HEADER.size
            continue
        if end - pos < _BLOCK_LENGTH.size:
            raise _bad_snappy(
                f"{end - pos} bytes at byte {pos} are too few for a block length "
                "(truncated or trailing data)"
            )
        n = _BLOCK_LENGTH.unpack_from(data, pos)[0]
        pos += _BLOCK_LENGTH.size
        if n <= 0 or n > end - pos:
            raise _bad_snappy(
                f"a block of {n} bytes at byte {pos} does not fit the {end}-byte "
                "section (truncated or trailing data)"
            )
        out = _snappy_block(data[pos : pos + n], max_size - total)
        total += len(out)
        parts.append(out)
        pos += n
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _snappy_block(block: bytes, room: int) -> bytes:
    if cramjam.snappy.decompress_raw_len(block) > room:
        raise _too_large(room)
    return bytes(cramjam.snappy.decompress_raw(block))


def _bad_snappy(what: str) -> CorruptBatchError:
    return CorruptBatchError(f"cannot decompress snappy records section: {what}")
