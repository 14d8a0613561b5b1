"""The import direction is one-way: clients <- kraft <- broker, and chaos beside broker (it reads
kraft's logs and talks through clients); only entry (the `kraft` command) sits above both. A
lower layer naming a higher one (even inside a function) fails here, with the file and line.

Inside broker/ and kraft/ the rooms (each folder, and each module beside them) stand in floors
too: ROOMS lists them bottom to top, and a room imports only itself and rooms below it, so no two
rooms import each other. There are no exceptions. A new room goes into ROOMS at its floor."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "clients": ("kraft", "broker", "chaos", "entry"),
    "kraft": ("broker", "chaos", "entry"),
    "broker": ("chaos", "entry"),
    "chaos": ("broker", "entry"),
}

# Bottom to top. broker/: the wire edges every room shares (request limits, the controller
# channel) and security stand on the ground; partitions and their producer state, then the
# metadata seat that places them; the controller seat; the coordinator runtime, then the
# transaction and group coordinators on it (group/ answers FindCoordinator for both); the
# wire-neutral handlers of every request over them, the gRPC services that translate protobuf
# to those handlers and the Kafka wire listener that translates Kafka's protocol to them; the metrics endpoint (it reads the rooms duck-typed, importing none); and
# the node that wires them all. kraft/: files, the log, Raft on it; ACL bindings, then the metadata
# records and image that hold them (latency_histogram.py, a plain counter the Raft driver keeps,
# stands on the ground with fs.py); the controller's state machine over that image; and
# spark.py, the public face's name for the Spark source (it imports only clients).
ROOMS = {
    "broker": (
        "edge",
        "security",
        "idempotence",
        "replication",
        "metadata",
        "controller",
        "coordinator",
        "transaction",
        "group",
        "handlers",
        "services",
        "kafka",
        "metrics",
        "server",
    ),
    "kraft": (
        "fs",
        "latency_histogram",
        "log",
        "raft",
        "security",
        "metadata",
        "controller",
        "spark",
    ),
}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_lower_layers_never_import_higher_ones(package):
    pattern = re.compile(r"^\s*(from|import)\s+(%s)\b" % "|".join(FORBIDDEN[package]))
    offenders = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.match(line)
    ]
    assert offenders == []


def test_the_pattern_catches_an_upward_import_inside_a_function():
    pattern = re.compile(r"^\s*(from|import)\s+(%s)\b" % "|".join(FORBIDDEN["chaos"]))
    assert pattern.match("        from entry.dev import broker_views")
    assert not pattern.match("from chaos.node_logs import ROOT")


def imported_rooms(package: str, line: str) -> list[str]:
    """The rooms of `package` that one source line imports (at any indent): `from P.room...`,
    `import P.room...`, `from P import room, other`."""
    found = re.match(r"^\s*(?:from|import)\s+%s\.(\w+)" % package, line)
    if found:
        return [found.group(1)]
    found = re.match(r"^\s*from\s+%s\s+import\s+\(?([\w\s,]+)" % package, line)
    if found:
        return [name.split()[0] for name in found.group(1).split(",") if name.strip()]
    return []


def upward_imports(package: str, room: str, lines, where: str) -> list[str]:
    """`where:line: room imports higher (line)` for each import of a room not below `room`."""
    order = ROOMS[package]
    return [
        f"{where}:{n}: {room} imports {target}, which stands above it: {line.strip()}"
        for n, line in enumerate(lines, 1)
        for target in imported_rooms(package, line)
        if target != room and target in order and order.index(target) > order.index(room)
    ]


def room_of(package: str, path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT / package).parts
    return parts[0] if len(parts) > 1 else path.stem


@pytest.mark.parametrize("package", sorted(ROOMS))
def test_rooms_list_every_room_of_the_package(package):
    rooms = {room_of(package, path) for path in (ROOT / package).rglob("*.py")} - {"__init__"}
    assert sorted(rooms - set(ROOMS[package])) == [], "put each new room into ROOMS at its floor"
    assert sorted(set(ROOMS[package]) - rooms) == [], "a room in ROOMS is gone: take it out"


@pytest.mark.parametrize("package", sorted(ROOMS))
def test_rooms_import_only_rooms_below_them(package):
    offenders = [
        offender
        for path in sorted((ROOT / package).rglob("*.py"))
        if room_of(package, path) in ROOMS[package]
        for offender in upward_imports(
            package,
            room_of(package, path),
            path.read_text().splitlines(),
            str(path.relative_to(ROOT)),
        )
    ]
    assert not offenders, "\n" + "\n".join(offenders)


def test_an_upward_import_between_rooms_is_caught_with_its_file_and_line():
    lines = [
        "from broker.edge.request_limits import Refused",  # below: fine
        "from broker.group.records import OFFSETS_TOPIC",  # its own room: fine
        "    from broker.server.node import Node",  # above, in a function
        "from broker import transaction",  # below: fine
        "from broker import edge, server as node",
    ]  # one of two above
    assert upward_imports("broker", "group", lines, "broker/group/x.py") == [
        "broker/group/x.py:3: group imports server, which stands above it: "
        "from broker.server.node import Node",
        "broker/group/x.py:5: group imports server, which stands above it: "
        "from broker import edge, server as node",
    ]
    assert upward_imports("kraft", "security", ["import kraft.metadata.records"], "f.py") == [
        "f.py:1: security imports metadata, which stands above it: import kraft.metadata.records"
    ]
