"""The randomised run every partition-simulation seed does: producers with acks=all under drops,
delays, duplicates, data-plane cuts, brokers cut from the controller, crashes that lose unflushed
records and restarts; then everything heals and the partition must recover.

Fault model. Kafka promises that a committed record survives while one ISR replica holding it
survives (the durability promise in README.md); it does not survive every ISR member losing its unflushed tail, nor the
"last replica standing" cases of KIP-966. So the nemesis keeps within the promise:
- a broker is crashed only while some *other* ISR member is alive, registered with its current
  process and reachable by the controller, and never while its own AlterPartition is in flight
  (applied after the crash, a shrink could leave the dead leader, which lost data, alone in the
  ISR);
- no broker is cut from the controller while an ISR member is down or not yet re-registered
  (fencing could drop the last good copy from the ISR, leaving only replicas that lost data);
- controller links behave like Kafka's TCP connections: delayed, never duplicated, lost only
  while cut (random heartbeat loss would be fencing by another name).
Every other fault is free: replica links drop, duplicate, delay and cut, any time, any way."""

from __future__ import annotations

import random

from partition_sim import CONTROLLER, REPLICAS, Simulation

from broker.replication import ReplicationConfig

CHAOS_MS = 900
LIVENESS_MS = 2500


def _config(plan: random.Random) -> ReplicationConfig:
    return ReplicationConfig(
        replica_lag_time_max_ms=plan.choice((60, 100)),
        min_insync_replicas=plan.choice((1, 2, 2)),
        alter_partition_timeout_ms=80,
        alter_partition_backoff_ms=20,
    )


def may_crash(sim: Simulation, victim: int) -> bool:
    if sim.in_flight(victim, "alter"):
        return False
    return any(
        b.broker_id != victim
        and (b.broker_id, CONTROLLER) not in sim.cut
        and (CONTROLLER, b.broker_id) not in sim.cut
        for b in sim.healthy_isr()
    )


def may_cut_from_controller(sim: Simulation) -> bool:
    return set(sim.controller.reg.isr) == {b.broker_id for b in sim.healthy_isr()}


def run_chaos(seed: int) -> Simulation:
    """Faults for CHAOS_MS, then heal and require, within LIVENESS_MS, all three replicas back in
    the ISR and a fresh acks=all record acknowledged; finally every acknowledged record must be
    on every replica. Raises InvariantViolation (naming the seed) on any failure."""
    plan = random.Random(seed * 7919 + 3)
    sim = Simulation(
        seed,
        _config(plan),
        drop=plan.choice((0.0, 0.02, 0.1)),
        duplicate=plan.choice((0.0, 0.05)),
        max_delay_ms=plan.choice((3, 5, 12)),
    )

    def crash(broker_id: int) -> None:
        if sim.brokers[broker_id].alive and may_crash(sim, broker_id):
            sim.crash(broker_id)
            sim.at(sim.now + plan.randint(20, 300), sim.restart, broker_id)

    def fault() -> None:
        kind = plan.randrange(7)
        victim = plan.choice(REPLICAS)
        leaders = [b.broker_id for b in sim.brokers.values() if b.alive and b.state.is_leader]
        if kind == 0:
            for other in REPLICAS:  # a data-plane partition: the controller still hears it
                if other != victim:
                    sim.cut |= {(victim, other), (other, victim)}
        elif kind == 1:
            sim.cut.add(tuple(plan.sample(REPLICAS, 2)))
        elif kind == 2 and may_cut_from_controller(sim):
            sim.cut |= {(victim, CONTROLLER), (CONTROLLER, victim)}
        elif kind == 3:
            crash(victim)
        elif kind == 4 and leaders:
            crash(plan.choice(leaders))
        elif kind == 5 and leaders and may_cut_from_controller(sim):
            # The leader is cut off entirely: the controller elects another; it becomes a zombie.
            leader = plan.choice(leaders)
            sim.cut |= {(leader, o) for o in (CONTROLLER,) + REPLICAS if o != leader}
            sim.cut |= {(o, leader) for o in (CONTROLLER,) + REPLICAS if o != leader}
        else:
            sim.cut.clear()

    for t in _times(plan, 5, 30):
        sim.at(t, sim.produce, plan.randint(1, 3))
    for t in _times(plan, 40, 200):
        sim.at(t, fault)
    sim.run_for(CHAOS_MS)

    sim.cut.clear()
    sim.drop = sim.duplicate = 0.0
    for b in REPLICAS:
        sim.restart(b)
    healed_at = sim.now
    all_in_sync = lambda: set(sim.controller.reg.isr) == set(REPLICAS)  # noqa: E731
    if not sim.run_until(all_in_sync, LIVENESS_MS):
        sim.fail(f"ISR {sim.controller.reg.isr} still short {LIVENESS_MS} ms after healing")
    while True:
        acked = sim.stats["acked"]
        sim.produce(1)
        left = LIVENESS_MS - (sim.now - healed_at)
        if left <= 0:
            sim.fail(f"no acks=all record acknowledged within {LIVENESS_MS} ms after healing")
        if sim.run_until(lambda: sim.stats["acked"] > acked, min(left, 100)):
            break
    sim.run_until(lambda: _converged(sim), LIVENESS_MS)
    for b in sim.brokers.values():
        for offset, payload in sim.acked.items():
            r = b.log.record_at(offset)
            if r is None or r.payload != payload:
                sim.fail(f"after healing, broker {b.broker_id} lacks acknowledged offset {offset}")
    return sim


def _times(plan: random.Random, low: int, high: int) -> list[int]:
    times = [plan.randint(low, high)]
    while times[-1] + high < CHAOS_MS:
        times.append(times[-1] + plan.randint(low, high))
    return times


def _converged(sim: Simulation) -> bool:
    logs = [b.log.records() for b in sim.brokers.values()]
    return all(log == logs[0] for log in logs)
