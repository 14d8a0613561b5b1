"""The audit says what each nemesis may cost: every nemesis the chaos run can draw has an entry
(a new one cannot be added without saying it), faults.jsonl's names map to their nemesis, the
notices name each nemesis the run had, and a torn tail only a crash or a full disk explains is
pointed out when no such fault hit that replica."""

from __future__ import annotations

import pytest

from chaos.audit.fault_costs import COSTS, base_nemesis, crashed_replicas, notices
from chaos.cli import torn_tail_notices
from chaos.history import FaultWindow
from chaos.nemesis import NEMESES, PARTITIONS


def test_every_nemesis_says_what_it_may_cost():
    assert set(COSTS) == set(NEMESES)
    assert all(c.may and c.never for c in COSTS.values())


def test_fault_names_map_to_their_nemesis():
    assert {base_nemesis(f"partition-{k}") for k in PARTITIONS} == {"partition"}
    assert base_nemesis("clock-strobe") == "clock" and base_nemesis("disk-full") == "disk-full"
    with pytest.raises(ValueError, match="no nemesis"):
        base_nemesis("flood")


def test_notices_and_torn_tails():
    faults = [
        FaultWindow("net", (4,), 1, 2),
        FaultWindow("net", (5,), 3, 4),
        FaultWindow("corrupt", (6,), 5, 6),
        FaultWindow("clock-bump", (1, 2), 7, 8),
    ]
    lines = notices(faults)
    assert [line.split(":")[0] for line in lines] == ["net x2", "corrupt x1", "clock x1"]
    assert crashed_replicas(faults) == {6}
    assert torn_tail_notices(faults, [6]) == []
    (odd,) = torn_tail_notices(faults, [4, 6])
    assert "[4]" in odd and "torn tail" in odd
    assert torn_tail_notices([], [3]) == []


def test_an_unknown_fault_is_named_not_fatal():
    faults = [FaultWindow("flood", (4,), 1, 2)]
    (line,) = notices(faults)
    assert line.startswith("flood x1") and "knows nothing" in line
    assert crashed_replicas(faults) == {4}


def test_a_power_cut_may_lose_unsynced_writes_never_acknowledged_ones():
    faults = [FaultWindow("power", (2,), 1, 2), FaultWindow("pause", (3,), 3, 4)]
    (power, _) = notices(faults)
    assert power.startswith("power x1") and "last fsync" in power
    assert "acks=all" in power.split("never")[1] and "metadata" in power.split("never")[1]
    assert crashed_replicas(faults) == {2}  # a torn tail there is the cut's
