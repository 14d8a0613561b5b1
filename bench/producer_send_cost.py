"""The producer's per-record cost in the sending thread, no broker: an AsyncProducer that is never
started, whose topic's partition count is known, takes N records through `send_from_thread` (the
blocking Producer's send) and, where the checkout has it, `send_batch`; prints ns per record."""

from __future__ import annotations

import argparse
import json
import time

from clients.producer.producer import AsyncProducer


def fresh() -> AsyncProducer:
    p = AsyncProducer("127.0.0.1:1", acks=1, linger_ms=5, buffer_memory=1 << 40)
    p._acc.set_num_partitions("t", 8)
    p._wake_sender = lambda: None  # no sender runs: nothing to wake
    return p


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--value-size", type=int, default=100)
    args = ap.parse_args()
    value = b"x" * args.value_size
    out = {}
    p = fresh()
    send = p.send_from_thread
    t = time.perf_counter()
    for _ in range(args.records):
        send("t", value)
    out["send_ns"] = round((time.perf_counter() - t) / args.records * 1e9)
    if hasattr(AsyncProducer, "send_batch_from_thread"):
        p = fresh()
        values = [value] * 1000
        t = time.perf_counter()
        for _ in range(args.records // 1000):
            p.send_batch_from_thread("t", values)
        out["send_batch_ns"] = round((time.perf_counter() - t) / args.records * 1e9)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
