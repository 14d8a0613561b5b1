"""The chaos run's network: a Linux network namespace per node on a bridge in the root namespace,
so a partition is packets really dropped (iptables in the node's namespace), not a flag in kraft."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterable, Mapping

# Layout: bridge `kraftbr0` holds 10.77.0.254/24 in the root namespace (the runner and the
# workload's clients sit there); node <id> lives in namespace `kraft-n<id>` with eth0 =
# 10.77.0.<id>/24, the peer of veth `kv<id>` on the bridge.
#
# Why iptables DROP and not blackhole routes: a blackhole route makes the *sender* fail at once
# (EINVAL) and only cuts outgoing packets, so a node would learn of the partition instantly, which
# real networks never tell it. A DROP rule in INPUT loses packets silently: TCP retransmits, gRPC
# deadlines expire, as with a pulled cable. Rules are per namespace, so heal is one flush each, and
# grudges may be one-way (Jepsen's model: node A drops what comes from B).
BRIDGE = "kraftbr0"
SUBNET = "10.77.0"
HOST_ADDRESS = f"{SUBNET}.254"  # the root namespace's address: the workload's clients
NS_PREFIX = "kraft-n"
VETH_PREFIX = "kv"
RULE_COMMENT = "kraft-chaos"
# Docker sets the root FORWARD policy to DROP, and with br_netfilter loaded bridged frames pass
# through it: without this rule the nodes could not reach each other at all.
FORWARD_RULE = [
    "FORWARD",
    "-i",
    BRIDGE,
    "-o",
    BRIDGE,
    "-m",
    "comment",
    "--comment",
    RULE_COMMENT,
    "-j",
    "ACCEPT",
]

Runner = Callable[[list[str]], subprocess.CompletedProcess]


class NetnsError(RuntimeError):
    """A namespace, link or rule could not be set up; the message names the command."""


def ns_name(node_id: int) -> str:
    return f"{NS_PREFIX}{node_id}"


def address(node_id: int) -> str:
    if not 1 <= node_id <= 253:
        raise ValueError(f"node id {node_id}: the chaos network has addresses for ids 1-253")
    return f"{SUBNET}.{node_id}"


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def unavailable_reason(run: Runner = _run) -> str | None:
    """Why namespaces cannot be used here (None when they can): not root, no `ip` or `iptables`,
    or a sandbox that refuses `ip netns add`."""
    if os.geteuid() != 0:
        return "network namespaces need root (run as root, or use --docker)"
    probe = f"{NS_PREFIX}probe"
    try:
        run(["ip", "netns", "del", probe])
        made = run(["ip", "netns", "add", probe])
        if made.returncode != 0:
            return f"`ip netns add` is not permitted here: {made.stderr.strip()}"
        rule = run(
            [
                "ip",
                "netns",
                "exec",
                probe,
                "iptables",
                "-A",
                "INPUT",
                "-s",
                "10.0.0.1",
                "-j",
                "DROP",
            ]
        )
        if rule.returncode != 0:
            return (
                f"iptables does not work inside a namespace: {rule.stderr.strip()} "
                f"(install it with: apt-get install -y iptables)"
            )
    except FileNotFoundError as exc:
        return f"{exc.filename} is not installed (apt-get install -y iproute2 iptables)"
    finally:
        try:
            run(["ip", "netns", "del", probe])
        except FileNotFoundError:
            pass
    return None


class Network:
    """The bridge, the namespaces and the partition rules of one run. `setup` first removes what
    a crashed run left behind; `teardown` removes everything; both are safe to repeat."""

    def __init__(self, node_ids: Iterable[int], run: Runner = _run) -> None:
        self.node_ids = sorted(node_ids)
        self._run = run
        self.grudge: dict[int, frozenset[int]] = {}

    def _must(self, cmd: list[str]) -> None:
        done = self._run(cmd)
        if done.returncode != 0:
            raise NetnsError(f"`{' '.join(cmd)}` failed: {done.stderr.strip()}")

    def setup(self) -> None:
        cleanup(self._run)
        self._must(["ip", "link", "add", BRIDGE, "type", "bridge"])
        self._must(["ip", "addr", "add", f"{HOST_ADDRESS}/24", "dev", BRIDGE])
        self._must(["ip", "link", "set", BRIDGE, "up"])
        self._must(["iptables", "-I", *FORWARD_RULE[:1], "1", *FORWARD_RULE[1:]])
        for node_id in self.node_ids:
            ns, veth = ns_name(node_id), f"{VETH_PREFIX}{node_id}"
            self._must(["ip", "netns", "add", ns])
            self._must(
                ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns]
            )
            self._must(["ip", "link", "set", veth, "master", BRIDGE, "up"])
            self._must(["ip", "-n", ns, "addr", "add", f"{address(node_id)}/24", "dev", "eth0"])
            self._must(["ip", "-n", ns, "link", "set", "eth0", "up"])
            self._must(["ip", "-n", ns, "link", "set", "lo", "up"])

    def apply(self, grudge: Mapping[int, Iterable[int]]) -> None:
        """Node n drops every packet from each node in grudge[n]; adds to what is already cut."""
        for node_id, peers in sorted(grudge.items()):
            new = set(peers) - self.grudge.get(node_id, frozenset()) - {node_id}
            for peer in sorted(new):
                self._must(
                    [
                        "ip",
                        "netns",
                        "exec",
                        ns_name(node_id),
                        "iptables",
                        "-A",
                        "INPUT",
                        "-s",
                        address(peer),
                        "-j",
                        "DROP",
                    ]
                )
            self.grudge[node_id] = self.grudge.get(node_id, frozenset()) | frozenset(new)

    def heal(self) -> None:
        for node_id in self.node_ids:
            self._must(["ip", "netns", "exec", ns_name(node_id), "iptables", "-F", "INPUT"])
        self.grudge = {}

    def teardown(self) -> list[str]:
        return cleanup(self._run)


def namespaces(run: Runner = _run) -> list[str]:
    listed = run(["ip", "netns", "list"])
    names = [line.split()[0] for line in listed.stdout.splitlines() if line.strip()]
    return [n for n in names if n.startswith(NS_PREFIX) and n[len(NS_PREFIX) :].isdigit()]


def cleanup(run: Runner = _run) -> list[str]:
    """Kill whatever still runs in our namespaces (a crashed run's nodes, paused ones too), then
    delete them, the bridge and the FORWARD rule. Returns a line per thing removed."""
    removed = []
    for ns in namespaces(run):
        pids = [int(p) for p in run(["ip", "netns", "pids", ns]).stdout.split() if p.isdigit()]
        for pid in pids:
            for signum in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.kill(pid, signum)
                except ProcessLookupError:
                    pass
        run(["ip", "netns", "del", ns])  # takes its veth pair with it
        removed.append(f"namespace {ns}" + (f" (killed pids {pids})" if pids else ""))
    if run(["ip", "link", "show", BRIDGE]).returncode == 0:
        run(["ip", "link", "del", BRIDGE])
        removed.append(f"bridge {BRIDGE}")
    for _ in range(10):  # -D removes one copy per call; crashed runs may have left several
        if run(["iptables", "-D", *FORWARD_RULE]).returncode != 0:
            break
        removed.append("FORWARD rule")
    return removed
