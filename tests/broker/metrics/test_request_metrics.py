"""Requests are counted per API, listener and error code at the gRPC interceptor: every
error_code of an answer counts (one per partition), an aborted call counts its Kafka error."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from broker.metrics.interceptor import (
    RequestMetricsInterceptor,
    aborted_error,
    error_counts,
    error_plan,
)
from broker.metrics.request_stats import RequestStats
from clients import request_times as request_times_module
from clients.errors import ErrorCode as E
from clients.request_times import RequestTimes
from clients.wire import broker_pb2 as bpb
from kraft.latency_histogram import LatencyHistogram

PRODUCE = "/kraft.broker.v1.Broker/Produce"


def produce_response(*codes: int) -> bpb.ProduceResponse:
    return bpb.ProduceResponse(
        topics=[
            bpb.TopicProduceResponse(
                name="t",
                partitions=[
                    bpb.PartitionProduceResponse(partition=i, error_code=c)
                    for i, c in enumerate(codes)
                ],
            )
        ]
    )


def test_error_counts_reads_every_nested_error_code():
    plan = error_plan(bpb.ProduceResponse.DESCRIPTOR)
    assert error_counts(produce_response(0, 0, E.NOT_LEADER_OR_FOLLOWER), plan) == {
        0: 2,
        E.NOT_LEADER_OR_FOLLOWER: 1,
    }
    # No partitions, no code: the request still counts once, as NONE.
    assert error_counts(bpb.ProduceResponse(), plan) == {0: 1}


def test_observe_request_counts_requests_errors_and_time():
    stats = RequestStats()
    stats.observe_request("Produce", "PLAINTEXT", {0: 2, E.NOT_LEADER_OR_FOLLOWER: 1}, 0.003)
    stats.observe_request("Produce", "PLAINTEXT", 0, 0.2)
    stats.observe_request("Produce", "SSL", "CANCELLED", 0.001)
    assert stats.requests == {("Produce", "PLAINTEXT"): 2, ("Produce", "SSL"): 1}
    assert stats.errors == {
        ("Produce", "PLAINTEXT", "NONE"): 3,
        ("Produce", "PLAINTEXT", "NOT_LEADER_OR_FOLLOWER"): 1,
        ("Produce", "SSL", "CANCELLED"): 1,
    }
    buckets, total, count = stats.total_time[("Produce", "PLAINTEXT")].snapshot()
    assert count == 2 and total == pytest.approx(0.203)
    assert dict(buckets)["0.005"] == 1 and dict(buckets)["0.25"] == 2


def test_histogram_buckets_are_cumulative_and_end_in_inf():
    h = LatencyHistogram((0.1, 1.0))
    for s in (0.05, 0.1, 0.5, 7.0):
        h.observe(s)
    assert h.snapshot() == ([("0.1", 2), ("1.0", 3), ("+Inf", 4)], pytest.approx(7.65), 4)


class FakeContext:
    def __init__(self, code=None, details=None) -> None:
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


class Details:
    method = PRODUCE


def intercepted(behavior) -> tuple[RequestStats, object]:
    stats = RequestStats()
    ticks = iter(range(100))
    interceptor = RequestMetricsInterceptor(stats, "PLAINTEXT", clock=lambda: next(ticks) / 1000)
    calls = []

    async def continuation(details):
        calls.append(details.method)
        return grpc.unary_unary_rpc_method_handler(behavior)

    async def two_calls():
        first = await interceptor.intercept_service(continuation, Details())
        second = await interceptor.intercept_service(continuation, Details())
        assert first is second  # wrapped once per method
        return first

    handler = asyncio.run(two_calls())
    assert calls == [PRODUCE]
    return stats, handler


def test_the_interceptor_counts_the_answer_codes_of_serialized_answers():
    async def produce(request, context):
        return produce_response(0, E.NOT_ENOUGH_REPLICAS).SerializeToString()

    stats, handler = intercepted(produce)
    answer = asyncio.run(handler.unary_unary(b"", FakeContext()))
    assert bpb.ProduceResponse.FromString(answer) == produce_response(0, E.NOT_ENOUGH_REPLICAS)
    assert stats.requests == {("Produce", "PLAINTEXT"): 1}
    assert stats.errors == {
        ("Produce", "PLAINTEXT", "NONE"): 1,
        ("Produce", "PLAINTEXT", "NOT_ENOUGH_REPLICAS"): 1,
    }
    assert stats.total_time[("Produce", "PLAINTEXT")].snapshot()[1] == pytest.approx(0.001)


def test_an_aborted_call_counts_the_kafka_error_its_details_name():
    async def failing(request, context):
        raise RuntimeError("aborted")

    stats, handler = intercepted(failing)
    context = FakeContext(grpc.StatusCode.INTERNAL, "UNKNOWN_SERVER_ERROR: Broker.Produce failed")
    with pytest.raises(RuntimeError):
        asyncio.run(handler.unary_unary(b"", context))
    assert stats.errors == {("Produce", "PLAINTEXT", "UNKNOWN_SERVER_ERROR"): 1}


@pytest.mark.parametrize(
    "code, details, expected",
    [
        (
            grpc.StatusCode.UNAUTHENTICATED,
            "SASL_AUTHENTICATION_FAILED: who are you",
            "SASL_AUTHENTICATION_FAILED",
        ),
        (
            grpc.StatusCode.INVALID_ARGUMENT,
            "Broker.Produce: the request is not valid",
            "INVALID_ARGUMENT",
        ),
        (None, None, "CANCELLED"),  # the client went away: no status was set
    ],
)
def test_aborted_error_names(code, details, expected):
    assert aborted_error(FakeContext(code, details)) == expected


def test_remote_time_is_the_time_any_wait_was_parked(monkeypatch):
    now = iter([1.0, 1.5, 3.0, 4.0, 4.5])
    monkeypatch.setattr(request_times_module.time, "perf_counter", lambda: next(now))
    times = RequestTimes()
    times.park()  # 1.0
    times.park()  # side by side: no new start
    times.unpark()
    times.unpark()  # 1.5: 0.5 parked
    times.park()  # 3.0
    times.unpark()  # 4.0: 1.0 more
    assert times.remote_s == pytest.approx(1.5)


def test_observe_request_splits_queue_remote_and_local():
    stats = RequestStats()
    stats.observe_request("Produce", "PLAINTEXT", 0, 0.5, queue_s=0.1, remote_s=0.3)
    stats.observe_request("Metadata", "PLAINTEXT", 0, 0.5)  # not measured: total only
    key = ("Produce", "PLAINTEXT")
    assert [
        h[key].snapshot()[1] for h in (stats.queue_time, stats.remote_time, stats.local_time)
    ] == pytest.approx([0.1, 0.3, 0.1])
    assert ("Metadata", "PLAINTEXT") not in stats.queue_time
