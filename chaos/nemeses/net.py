"""The `net` nemesis: a node's outgoing packets delayed with jitter, lost, duplicated or
reordered, as Jepsen's `packet` nemesis does with `tc qdisc add dev eth0 root netem ...` on the
nodes it aims at (egress only, so a node's peers see its packets late; what it receives is left
alone). Healed by removing what was added.

Two ways to do it, probed once: netem when the kernel has it; else (no CONFIG_NET_SCH_NETEM, as in
this project's CI VM) an iptables chain in the node's namespace: TEE duplicates, NFQUEUE hands
the rest to chaos.nemeses.shaper, a userspace netem running in that namespace."""

from __future__ import annotations

import dataclasses
import random
import subprocess
import sys
from collections.abc import Callable, Iterable

CHAIN = "KRAFT-NET"
DELAY_MS = (50, 500)  # a fault's mean delay is drawn from this range
LOSS = (0.01, 0.30)
DUPLICATE = (0.01, 0.10)
REORDER = (0.05, 0.25)

Runner = Callable[[list[str]], subprocess.CompletedProcess]
Enter = Callable[[int], list[str]]  # node id -> command prefix that runs inside its namespace


class NetFaultError(RuntimeError):
    """A rule, qdisc or shaper could not be set up; the message names the command."""


@dataclasses.dataclass(frozen=True)
class Behaviour:
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss: float = 0.0  # probabilities, 0-1
    duplicate: float = 0.0
    reorder: float = 0.0  # of packets that skip the delay (netem's reorder)

    def describe(self) -> str:
        parts = [
            f"delay {self.delay_ms:.0f}±{self.jitter_ms:.0f}ms" if self.delay_ms else "",
            f"loss {self.loss:.0%}" if self.loss else "",
            f"duplicate {self.duplicate:.0%}" if self.duplicate else "",
            f"reorder {self.reorder:.0%}" if self.reorder else "",
        ]
        return ", ".join(p for p in parts if p) or "nothing"

    def netem_args(self) -> list[str]:
        """`tc qdisc add dev eth0 root netem` arguments for the same behaviour."""
        args = []
        if self.delay_ms:
            args += ["delay", f"{self.delay_ms:.0f}ms", f"{self.jitter_ms:.0f}ms"]
        if self.loss:
            args += ["loss", f"{self.loss * 100:.2f}%"]
        if self.duplicate:
            args += ["duplicate", f"{self.duplicate * 100:.2f}%"]
        if self.reorder and self.delay_ms:
            args += ["reorder", f"{self.reorder * 100:.2f}%"]
        return args


def draw(rng: random.Random) -> Behaviour:
    """Like Jepsen's packet behaviours: a random non-empty mix of delay (with jitter up to half
    of it), loss, duplication and reordering (which needs a delay to overtake)."""
    kinds = [k for k in ("delay", "loss", "duplicate", "reorder") if rng.random() < 0.5]
    kinds = kinds or [rng.choice(("delay", "loss", "duplicate", "reorder"))]
    delay = rng.uniform(*DELAY_MS) if {"delay", "reorder"} & set(kinds) else 0.0
    return Behaviour(
        delay_ms=round(delay, 1),
        jitter_ms=round(rng.uniform(0, delay / 2), 1),
        loss=round(rng.uniform(*LOSS), 3) if "loss" in kinds else 0.0,
        duplicate=round(rng.uniform(*DUPLICATE), 3) if "duplicate" in kinds else 0.0,
        reorder=round(rng.uniform(*REORDER), 3) if "reorder" in kinds else 0.0,
    )


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


class NetFaults:
    """Behaviours per node. `peers` are the addresses a node's duplicates are sent to (TEE needs
    a gateway per destination): every other node and the workload's host."""

    def __init__(
        self,
        enter: Enter,
        peers: Iterable[str],
        run: Runner = _run,
        python: str = sys.executable,
        env: dict[str, str] | None = None,
        device: str = "eth0",
        netem: bool | None = None,
    ) -> None:
        self.enter, self.peers, self._run = enter, sorted(peers), run
        self.python, self.env, self.device = python, env, device
        self._netem = netem
        self.active: dict[int, Behaviour] = {}
        self.shapers: dict[int, subprocess.Popen] = {}

    def _must(self, node_id: int, args: list[str]) -> None:
        cmd = self.enter(node_id) + args
        done = self._run(cmd)
        if done.returncode != 0:
            raise NetFaultError(f"`{' '.join(cmd)}` failed: {done.stderr.strip()}")

    def netem_available(self, node_id: int) -> bool:
        if self._netem is None:
            probe = self._run(
                self.enter(node_id)
                + ["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]
            )
            self._netem = probe.returncode == 0
            if self._netem:
                self._run(self.enter(node_id) + ["tc", "qdisc", "del", "dev", "lo", "root"])
        return self._netem

    def start(self, node_id: int, behaviour: Behaviour, seed: int = 0) -> str:
        """Shape node_id's egress; replaces what it had. Returns how it was done, for the log."""
        self.heal(node_id)
        self.active[node_id] = behaviour
        if self.netem_available(node_id):
            self._must(
                node_id,
                [
                    "tc",
                    "qdisc",
                    "add",
                    "dev",
                    self.device,
                    "root",
                    "netem",
                    *behaviour.netem_args(),
                ],
            )
            return "netem"
        self._must(node_id, ["iptables", "-N", CHAIN])
        self._must(node_id, ["iptables", "-I", "OUTPUT", "1", "!", "-o", "lo", "-j", CHAIN])
        if behaviour.duplicate:
            for peer in self.peers:  # the copy goes straight out, ahead of a delayed original
                self._must(
                    node_id,
                    [
                        "iptables",
                        "-A",
                        CHAIN,
                        "-d",
                        peer,
                        "-m",
                        "statistic",
                        "--mode",
                        "random",
                        "--probability",
                        f"{behaviour.duplicate}",
                        "-j",
                        "TEE",
                        "--gateway",
                        peer,
                    ],
                )
        if behaviour.delay_ms or behaviour.loss or behaviour.reorder:
            queue = node_id  # one queue per namespace is enough: numbers are per namespace
            self._start_shaper(node_id, queue, behaviour, seed)
            # --queue-bypass: should the shaper die, packets pass instead of vanishing.
            self._must(
                node_id,
                [
                    "iptables",
                    "-A",
                    CHAIN,
                    "-j",
                    "NFQUEUE",
                    "--queue-num",
                    str(queue),
                    "--queue-bypass",
                ],
            )
        return "nfqueue"

    def _start_shaper(self, node_id: int, queue: int, b: Behaviour, seed: int) -> None:
        cmd = self.enter(node_id) + [
            self.python,
            "-m",
            "chaos.nemeses.shaper",
            "--queue",
            str(queue),
            "--delay-ms",
            str(b.delay_ms),
            "--jitter-ms",
            str(b.jitter_ms),
            "--loss",
            str(b.loss),
            "--reorder",
            str(b.reorder),
            "--seed",
            str(seed),
        ]
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            start_new_session=True,
        )
        line = proc.stdout.readline()
        if "bound" not in line:
            proc.kill()
            raise NetFaultError(
                f"the shaper in node {node_id}'s namespace did not start: "
                f"{line.strip()} {proc.stderr.read().strip()}"
            )
        self.shapers[node_id] = proc

    def heal(self, node_id: int) -> None:
        """Take away whatever node_id's egress has; harmless when it has nothing."""
        if self.active.pop(node_id, None) is None:
            return
        if self._netem:
            self._run(self.enter(node_id) + ["tc", "qdisc", "del", "dev", self.device, "root"])
        else:
            self._run(
                self.enter(node_id) + ["iptables", "-D", "OUTPUT", "!", "-o", "lo", "-j", CHAIN]
            )
            self._run(self.enter(node_id) + ["iptables", "-F", CHAIN])
            self._run(self.enter(node_id) + ["iptables", "-X", CHAIN])
        proc = self.shapers.pop(node_id, None)
        if proc is not None:
            proc.terminate()  # it lets every packet it holds go, then exits
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def heal_all(self) -> None:
        for node_id in sorted(self.active):
            self.heal(node_id)
