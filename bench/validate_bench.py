"""The leader's append path (validation, offsets, segment write) on batches of 100-byte records:
`python bench/validate_bench.py [--batches N] [--records-per-batch M]`, against the checkout on
PYTHONPATH (so one script measures two checkouts, run in turn)."""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from clients.record.codec import encode_batch
from clients.record.compression import NAMES, NONE, ZSTD
from kraft.log.log import Log
from kraft.log.log_config import LogConfig


def make_batches(count: int, per_batch: int, codec: int) -> list[bytes]:
    rng = random.Random(7)
    words = [b"order", b"user", b"amount", b"status", b"paid", b"shipped", b"eu-west", b"sku"]
    now = 1_700_000_000_000
    out = []
    for b in range(count):
        records = []
        for i in range(per_batch):
            body = b'{"id":%d,"%s":"%s","n":%d}' % (
                i,
                rng.choice(words),
                rng.choice(words),
                rng.randrange(10**6),
            )
            records.append((b"key-%d" % (i % 64), (body * 4)[:100].ljust(100, b" "), (), now + b))
        out.append(encode_batch(records, compression=codec))
    return out


def run(batches: list[bytes], repeat: int) -> float:
    """Best seconds over `repeat` passes, each appending every batch to a fresh log."""
    best = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            log = Log.open(Path(tmp) / "bench-0", LogConfig(), now_ms=0)
            start = time.perf_counter()
            for batch in batches:
                log.append_as_leader(batch, 0, now_ms=1_700_000_000_000)
            best = min(best, time.perf_counter() - start)
            log.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--records-per-batch", type=int, default=150)  # ~16 KiB, batch.size
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for codec in (NONE, ZSTD):
        batches = make_batches(args.batches, args.records_per_batch, codec)
        seconds = run(batches, args.repeat)
        records = args.batches * args.records_per_batch
        print(
            f"{NAMES[codec]:5s} {args.batches / seconds:9,.0f} batches/s "
            f"{records / seconds:11,.0f} records/s"
        )


if __name__ == "__main__":
    main()
