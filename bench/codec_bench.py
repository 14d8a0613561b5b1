"""Records per second for encode_batch and decode_records, per compression type, on 100-byte
values in batches of 1000, decoded 1 MiB at a time: `python bench/codec_bench.py [--records N]`."""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from clients.record.codec import decode_records, encode_batch  # noqa: E402
from clients.record.compression import GZIP, LZ4, NAMES, NONE, SNAPPY, ZSTD  # noqa: E402

FETCH_BYTES = 1 << 20


def make_records(count: int, rng: random.Random) -> list:
    # JSON-ish values so compression ratios look like real payloads, not random noise.
    words = [b"order", b"user", b"amount", b"status", b"paid", b"shipped", b"eu-west", b"sku"]
    now = 1_700_000_000_000
    out = []
    for i in range(count):
        body = b'{"id":%d,"%s":"%s","n":%d}' % (
            i,
            rng.choice(words),
            rng.choice(words),
            rng.randrange(10**6),
        )
        value = (body * 4)[:100].ljust(100, b" ")
        out.append((b"key-%d" % (i % 64), value, None, now + i // 50))
    return out


def best_rate(fn, items: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return items / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    records = make_records(args.records, random.Random(42))
    chunks = [records[i : i + args.batch] for i in range(0, len(records), args.batch)]
    print(f"{args.records} records of 100 B values, batches of {args.batch}, best of {args.repeat}")
    for codec in (NONE, GZIP, SNAPPY, LZ4, ZSTD):

        def encode():
            return [encode_batch(chunk, compression=codec) for chunk in chunks]

        batches = encode()
        # The consumer decodes one fetch response (about 1 MiB) at a time, then drops it.
        fetches, size = [], 0
        for batch in batches:
            if not fetches or size + len(batch) > FETCH_BYTES:
                fetches.append([])
                size = 0
            fetches[-1].append(batch)
            size += len(batch)
        fetches = [b"".join(f) for f in fetches]
        buf = b"".join(fetches)
        enc = best_rate(encode, len(records), args.repeat)

        def decode(verify_crc=True):
            for fetch in fetches:
                decode_records(fetch, verify_crc=verify_crc)

        dec = best_rate(decode, len(records), args.repeat)
        dec_nocrc = best_rate(lambda: decode(False), len(records), args.repeat)
        assert len(decode_records(buf)) == len(records)
        print(
            f"{NAMES[codec]:>6}: encode {enc / 1e6:5.2f} M rec/s   decode+crc {dec / 1e6:5.2f} M rec/s"
            f"   decode {dec_nocrc / 1e6:5.2f} M rec/s   {len(buf) / len(records):6.1f} B/rec"
        )


if __name__ == "__main__":
    main()
