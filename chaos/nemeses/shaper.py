"""A userspace netem: `python -m chaos.nemeses.shaper` run inside a node's network namespace takes
the packets an iptables NFQUEUE rule hands it and delays (with jitter), drops or reorders them.

Why not `tc qdisc ... netem`: kernels built without CONFIG_NET_SCH_NETEM (this project's CI VM is
one) refuse the qdisc. NFQUEUE is netfilter's: the kernel holds each queued packet until
userspace gives its verdict, so a delay is a verdict given late, a loss a DROP verdict, and
reordering some verdicts given at once while others wait. Duplication is iptables' TEE target
(chaos/nemeses/net.py), not this process. Only the standard library is used: the netlink messages
are packed by hand (linux/netfilter/nfnetlink_queue.h).
"""

from __future__ import annotations

import argparse
import heapq
import os
import random
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN = 1, 2, 3
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
NF_DROP, NF_ACCEPT = 0, 1
QUEUE_MAXLEN = 8192  # packets held at once; beyond it the kernel drops (counted as loss)


def _attr(kind: int, payload: bytes) -> bytes:
    head = struct.pack("=HH", 4 + len(payload), kind)
    return head + payload + b"\0" * (-len(payload) % 4)


def _message(msg: int, queue: int, attrs: bytes, seq: int, flags: int = NLM_F_REQUEST) -> bytes:
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + attrs
    return (
        struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg, flags, seq, 0) + body
    )


def packet_ids(data: bytes) -> list[int]:
    """The packet ids of the NFQNL_MSG_PACKET messages in one recv's bytes."""
    ids, at = [], 0
    while at + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, at)
        if length < 16:
            break
        if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            pos, end = at + 20, at + length  # past nlmsghdr and nfgenmsg
            while pos + 4 <= end:
                alen, atype = struct.unpack_from("=HH", data, pos)
                if alen < 4:
                    break
                if atype & 0x7FFF == NFQA_PACKET_HDR:
                    ids.append(struct.unpack_from("!I", data, pos + 4)[0])
                pos += (alen + 3) & ~3
        at += (length + 3) & ~3
    return ids


class Queue:
    """One bound NFQUEUE: packet ids in, verdicts out."""

    def __init__(self, number: int) -> None:
        self.number, self.seq = number, 0
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        self.sock.bind((0, 0))
        self._config(_attr(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_BIND, 0)))
        self._config(_attr(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META)))
        self._config(_attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_MAXLEN)))

    def _config(self, attrs: bytes) -> None:
        self.seq += 1
        self.sock.send(
            _message(NFQNL_MSG_CONFIG, self.number, attrs, self.seq, NLM_F_REQUEST | NLM_F_ACK)
        )
        reply = self.sock.recv(65536)
        _, kind = struct.unpack_from("=IH", reply)
        if kind == NLMSG_ERROR and struct.unpack_from("=i", reply, 16)[0] != 0:
            code = -struct.unpack_from("=i", reply, 16)[0]
            raise OSError(code, f"NFQUEUE {self.number} config refused: {os.strerror(code)}")

    def receive(self) -> list[int]:
        try:
            return packet_ids(self.sock.recv(1 << 20, socket.MSG_DONTWAIT))
        except BlockingIOError:
            return []
        except OSError:  # ENOBUFS: the kernel dropped messages; those packets are lost
            return []

    def verdict(self, packet_id: int, verdict: int) -> None:
        self.seq += 1
        self.sock.send(
            _message(
                NFQNL_MSG_VERDICT,
                self.number,
                _attr(NFQA_VERDICT_HDR, struct.pack("!II", verdict, packet_id)),
                self.seq,
            )
        )


class Shaper:
    """What to do with each packet: the pure part, seeded. `decide` returns None to drop the
    packet, else the delay in seconds before it is let through."""

    def __init__(
        self, delay_ms: float, jitter_ms: float, loss: float, reorder: float, seed: int
    ) -> None:
        for name, p in (("loss", loss), ("reorder", reorder)):
            if not 0 <= p <= 1:
                raise ValueError(f"{name} {p}: a probability is between 0 and 1")
        if delay_ms < 0 or jitter_ms < 0 or jitter_ms > delay_ms:
            raise ValueError(
                f"delay {delay_ms} ms, jitter {jitter_ms} ms: both >= 0, jitter at most the delay"
            )
        self.delay, self.jitter = delay_ms / 1000, jitter_ms / 1000
        self.loss, self.reorder = loss, reorder
        self.rng = random.Random(seed)

    def decide(self) -> float | None:
        if self.loss and self.rng.random() < self.loss:
            return None
        if self.reorder and self.rng.random() < self.reorder:
            return 0.0  # netem's reorder: this one goes at once, overtaking the delayed ones
        return max(0.0, self.delay + self.rng.uniform(-self.jitter, self.jitter))


def serve(queue: Queue, shaper: Shaper, stopping) -> None:
    """Until `stopping()`: queue packets' verdicts by due time; then let every held one go."""
    held: list[tuple[float, int]] = []
    while not stopping():
        now = time.monotonic()
        while held and held[0][0] <= now:
            queue.verdict(heapq.heappop(held)[1], NF_ACCEPT)
        wait = min(0.2, held[0][0] - now) if held else 0.2
        ready, _, _ = select.select([queue.sock], [], [], max(0.0, wait))
        if ready:
            now = time.monotonic()
            for packet_id in queue.receive():
                delay = shaper.decide()
                if delay is None:
                    queue.verdict(packet_id, NF_DROP)
                elif delay == 0:
                    queue.verdict(packet_id, NF_ACCEPT)
                else:
                    heapq.heappush(held, (now + delay, packet_id))
    for _, packet_id in held:
        queue.verdict(packet_id, NF_ACCEPT)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m chaos.nemeses.shaper", description=__doc__)
    p.add_argument("--queue", type=int, required=True)
    p.add_argument("--delay-ms", type=float, default=0)
    p.add_argument("--jitter-ms", type=float, default=0)
    p.add_argument("--loss", type=float, default=0, help="probability a packet is dropped")
    p.add_argument("--reorder", type=float, default=0, help="probability a packet skips the delay")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    try:
        shaper = Shaper(a.delay_ms, a.jitter_ms, a.loss, a.reorder, a.seed)
        queue = Queue(a.queue)
    except (ValueError, OSError) as exc:
        print(f"shaper: {exc}", file=sys.stderr)
        return 2
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("shaper: bound", flush=True)  # net.py waits for this line before adding its rule
    serve(queue, shaper, lambda: bool(stop))
    return 0


if __name__ == "__main__":
    sys.exit(main())
