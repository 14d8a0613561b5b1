"""The driver on a fake clock: its tick loop aborts a transaction past its timeout (markers with
the bumped epoch go out, CompleteAbort is written) and losing leadership answers a request
parked on an append NOT_COORDINATOR."""

from __future__ import annotations

from types import SimpleNamespace

import trio
import trio.testing

from broker.replication.replica_manager import ReplicaManager
from broker.transaction import messages as m
from broker.transaction.coordinator_registry import TransactionCoordinators
from broker.transaction.messages import TransactionConfig
from broker.transaction.records import TRANSACTION_STATE_TOPIC
from clients.errors import ErrorCode as E
from clients.types import TopicPartition as TP
from clients.wire import broker_pb2
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration


class Image:
    def topic(self, name):
        if name == TRANSACTION_STATE_TOPIC:
            return SimpleNamespace(partitions={0: None})
        return SimpleNamespace(partitions={0: SimpleNamespace(leader=1, has_leader=True)})


def setup(tmp_path, replicas_of_state=(1,)):
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    sent = []

    async def send(node, request):
        sent.append(request)
        out = broker_pb2.WriteTxnMarkersResponse()
        for marker in request.markers:
            result = out.markers.add(producer_id=marker.producer_id)
            for t in marker.topics:
                for p in t.partitions:
                    result.partitions.add(topic=t.topic, partition=p)
        return out

    coordinators = TransactionCoordinators(
        replicas,
        SimpleNamespace(image=Image()),
        None,
        TransactionConfig(abort_timed_out_cleanup_interval_ms=1_000),
        send,
        clock_ms=lambda: int(trio.current_time() * 1000),
    )

    def lead(epoch):
        replicas.apply_registration(
            TRANSACTION_STATE_TOPIC,
            0,
            "id",
            LogConfig(cleanup_policy="compact"),
            PartitionRegistration(
                replicas=replicas_of_state,
                isr=replicas_of_state,
                leader=1,
                leader_epoch=epoch,
                partition_epoch=epoch,
            ),
        )

    return coordinators, lead, sent


async def ask(driver, call, fallback):
    return await driver.ask(lambda handle, now: call(driver.core, handle, now), fallback, 30)


async def test_a_timed_out_transaction_is_aborted_by_the_tick_loop(tmp_path, autojump_clock):
    coordinators, lead, sent = setup(tmp_path)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(coordinators.run)
        lead(4)
        await trio.testing.wait_all_tasks_blocked()
        driver = coordinators.driver_for("tx")
        init = await ask(
            driver,
            lambda core, h, now: core.handle_init_producer_id(
                h, m.InitProducerIdRequest("tx", 5_000), now, 77
            ),
            None,
        )
        assert (init.error, init.producer_id, init.producer_epoch) == (E.NONE, 77, 0)
        added = await ask(
            driver,
            lambda core, h, now: core.handle_add_partitions(
                h, m.AddPartitionsRequest("tx", 77, 0, frozenset({TP("t", 0)})), now
            ),
            None,
        )
        assert added.error == E.NONE
        await trio.sleep(4)
        assert driver.core.describe("tx").state == "Ongoing"
        await trio.sleep(3)
        await trio.testing.wait_all_tasks_blocked()
        d = driver.core.describe("tx")
        assert (d.state, d.producer_epoch) == ("CompleteAbort", 1)
        [request] = sent
        assert (
            request.markers[0].committed,
            request.markers[0].producer_epoch,
            request.markers[0].coordinator_epoch,
        ) == (False, 1, 4)
        nursery.cancel_scope.cancel()


async def test_losing_leadership_answers_a_parked_request_not_coordinator(tmp_path, autojump_clock):
    # Two replicas in the ISR and no follower fetching: the append can never commit.
    coordinators, lead, _ = setup(tmp_path, replicas_of_state=(1, 2))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(coordinators.run)
        lead(1)
        await trio.testing.wait_all_tasks_blocked()
        driver = coordinators.driver_for("tx")
        assert driver.core.status == "active"  # an empty log loads at once
        answers = []

        async def init():
            answers.append(
                await ask(
                    driver,
                    lambda core, h, now: core.handle_init_producer_id(
                        h, m.InitProducerIdRequest("tx", 5_000), now, 77
                    ),
                    "fallback",
                )
            )

        nursery.start_soon(init)
        await trio.testing.wait_all_tasks_blocked()
        assert answers == []  # parked on its append
        lead(2)  # a new leader epoch: this driver stops
        await trio.testing.wait_all_tasks_blocked()
        assert [a.error for a in answers] == [E.NOT_COORDINATOR]
        nursery.cancel_scope.cancel()
