"""kraft doctor's diagnosis as plain data: each kind of trouble is named in plain words with what
to do, the most serious first; a healthy cluster has no problem."""

from clients.diagnosis import GroupView, PartitionView, diagnose


def part(topic, p, leader, replicas, isr):
    return PartitionView(topic, p, leader, tuple(replicas), tuple(isr))


HEALTHY = [part("orders", 0, 1, (1, 2, 3), (1, 2, 3)), part("orders", 1, 2, (2, 3, 1), (2, 3, 1))]


def test_a_healthy_cluster_has_no_problem():
    caught_up = GroupView("billing", "Stable", 2, {"orders-0": 0, "orders-1": 0})
    assert diagnose(1, [1, 2, 3], HEALTHY, [caught_up]) == []


def test_no_active_controller_comes_first_and_says_what_to_check():
    [problem] = diagnose(None, [1, 2, 3], HEALTHY, [])
    assert problem.kind == "no_active_controller"
    assert (
        "majority of the controllers" in problem.message
        and "kraft quorum describe" in problem.message
    )


def test_a_broker_down_its_offline_and_under_replicated_partitions():
    partitions = [
        part("orders", 0, 1, (1, 3), (1,)),
        part("orders", 1, -1, (3,), (3,)),
        part("logs", 0, 2, (2, 1), (2, 1)),
    ]
    problems = diagnose(1, [1, 2], partitions, [])
    assert [p.kind for p in problems] == [
        "broker_not_live",
        "offline_partitions",
        "under_replicated_partitions",
    ]
    down, offline, under = problems
    assert down.details == {"broker": 3, "partitions": ["orders-0", "orders-1"]}
    assert down.message.startswith("broker 3 holds replicas of 2 partitions but is not live")
    assert offline.details["partitions"] == ["orders-1"] and "has no leader" in offline.message
    assert "unclean.leader.election.enable" in offline.message
    assert under.details["partitions"] == [
        {"partition": "orders-0", "replicas": [1, 3], "isr": [1]}
    ]
    assert "1 partition is under-replicated (orders-0)" in under.message


def test_groups_behind_are_reported_above_max_lag_and_an_empty_one_says_nobody_consumes():
    groups = [
        GroupView("billing", "Empty", 0, {"orders-0": 7, "orders-1": 0}),
        GroupView("audit", "Stable", 1, {"orders-0": 3}),
    ]
    problems = diagnose(1, [1, 2, 3], HEALTHY, groups, max_lag=5)
    [billing] = problems
    assert billing.kind == "group_lag" and billing.details["lag"] == 7
    assert "group 'billing' is 7 records behind on orders-0" in billing.message
    assert "no member is consuming" in billing.message and "--group billing" in billing.message
    assert [p.details["group"] for p in diagnose(1, [1, 2, 3], HEALTHY, groups)] == [
        "billing",
        "audit",
    ]
