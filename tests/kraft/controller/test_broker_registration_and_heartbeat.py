"""Brokers register fenced with a fresh broker epoch, are unfenced by a heartbeat once they
have replayed their own registration, and a second process with the same node.id is refused
while the first one's session lives."""

from controller_helpers import Harness

from clients.errors import ErrorCode
from kraft.controller.controller_config import ControllerConfig
from kraft.controller.messages import BrokerHeartbeatRequest, RegisterBrokerRequest
from kraft.metadata.records import BrokerRegistrationChangeRecord, RegisterBrokerRecord


def test_a_new_broker_starts_fenced_with_an_epoch():
    h = Harness()
    resp = h.register(1, rack="r1")
    assert resp.error_code == 0 and resp.broker_epoch >= 0
    broker = h.image.broker(1)
    assert broker.fenced and broker.rack == "r1" and broker.broker_epoch == resp.broker_epoch
    assert h.image.live_brokers() == []


def test_epochs_grow_with_every_registration():
    h = Harness()
    epochs = [h.register(b, incarnation=f"i{b}").broker_epoch for b in (1, 2, 1)]
    assert min(epochs) >= 0 and epochs == sorted(set(epochs))


def test_a_heartbeat_unfences_only_once_the_broker_caught_up():
    h = Harness()
    h.register(1)
    behind = h.heartbeat(1, caught_up=False)
    assert (behind.is_caught_up, behind.is_fenced) == (False, True)
    assert h.image.broker(1).fenced
    resp = h.heartbeat(1)
    assert (resp.is_caught_up, resp.is_fenced) == (True, False)
    assert h.log[-1] == BrokerRegistrationChangeRecord(1, h.broker_epochs[1], fenced=False)
    assert not h.image.broker(1).fenced


def test_a_heartbeat_from_an_unfenced_broker_writes_nothing():
    h = Harness()
    h.add_brokers([1])
    result = h.controller.handle_broker_heartbeat(
        BrokerHeartbeatRequest(1, h.broker_epochs[1], len(h.log)), 5
    )
    assert result.records == [] and result.response.is_fenced is False


def test_heartbeats_from_unknown_or_replaced_brokers_are_refused():
    h = Harness()
    h.add_brokers([1])
    unknown = h.call("handle_broker_heartbeat", BrokerHeartbeatRequest(7, 0, 0))
    assert unknown.error_code == ErrorCode.BROKER_ID_NOT_REGISTERED
    assert "broker 7 is not registered" in unknown.error_message
    stale = h.call("handle_broker_heartbeat", BrokerHeartbeatRequest(1, 999, 0))
    assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert "a newer registration replaced this process" in stale.error_message


def test_a_second_process_with_the_same_id_is_refused_while_the_first_lives():
    h = Harness(ControllerConfig(broker_session_timeout_ms=9000))
    h.register(1, incarnation="first", now_ms=0)
    h.heartbeat(1, now_ms=5000)
    dup = h.register(1, incarnation="second", now_ms=6000)
    assert dup.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    assert "check that node.id is unique" in dup.error_message
    assert h.image.broker(1).incarnation_id == "first"
    later = h.register(1, incarnation="second", now_ms=14_000)
    assert later.error_code == 0 and h.image.broker(1).incarnation_id == "second"


def test_the_same_process_may_register_again():
    h = Harness()
    first = h.register(1, incarnation="same", now_ms=0)
    again = h.register(1, incarnation="same", now_ms=1)
    assert again.error_code == 0 and again.broker_epoch > first.broker_epoch


def test_a_restarted_broker_loses_leadership_and_isr_membership():
    h = Harness()
    h.add_brokers([1, 2])
    h.create_topic("orders", partitions=2, rf=2)
    led_by_1 = [tp.partition for tp in h.image.partitions_led_by(1)]
    assert led_by_1
    h.register(1, incarnation="restarted", now_ms=20_000)
    assert h.image.broker(1).fenced
    assert h.image.partitions_led_by(1) == [] and h.image.partitions_in_isr_of(1) == []
    assert all(h.partition("orders", p).leader == 2 for p in led_by_1)


def test_controlled_shutdown_fences_and_then_says_shut_down():
    h = Harness()
    h.add_brokers([1, 2])
    h.create_topic("orders", partitions=2, rf=2)
    resp = h.heartbeat(1, want_shutdown=True)
    assert resp.is_fenced and resp.should_shut_down
    assert h.image.partitions_led_by(1) == []
    assert h.image.broker(1).fenced


def test_a_broker_that_asks_to_be_fenced_stays_fenced():
    h = Harness()
    h.add_brokers([1])
    assert h.heartbeat(1, want_fence=True).is_fenced
    resp = h.heartbeat(1, want_fence=True)
    assert resp.is_fenced and not resp.should_shut_down


def test_bad_registrations_are_refused():
    h = Harness()
    neg = h.call("handle_register_broker", RegisterBrokerRequest(-1, "x", "h", 1))
    assert neg.error_code == ErrorCode.INVALID_REQUEST and "node.id" in neg.error_message
    empty = h.call("handle_register_broker", RegisterBrokerRequest(1, "", "h", 1))
    assert empty.error_code == ErrorCode.INVALID_REQUEST
    assert h.log == []


def test_registration_records_say_who_registered():
    h = Harness()
    h.register(3, rack="east", incarnation="abc")
    record = h.log[-1]
    assert isinstance(record, RegisterBrokerRecord)
    assert (record.broker_id, record.incarnation_id, record.rack, record.fenced) == (
        3,
        "abc",
        "east",
        True,
    )


def test_a_new_active_controller_lets_a_restarted_broker_register_at_once():
    # The new controller never heard from the old incarnation: refusing its successor would stall
    # every restart of a combined node for broker.session.timeout.ms.
    h = Harness(ControllerConfig(broker_session_timeout_ms=9000))
    h.register(1, incarnation="first", now_ms=0)
    h.heartbeat(1, now_ms=1000)
    h.controller.become_active(2000)
    again = h.register(1, incarnation="second", now_ms=2500)
    assert again.error_code == 0 and h.image.broker(1).incarnation_id == "second"


def test_after_a_controlled_shutdown_the_next_process_registers_at_once():
    h = Harness(ControllerConfig(broker_session_timeout_ms=9000))
    h.register(1, incarnation="first", now_ms=0)
    assert h.heartbeat(1, want_shutdown=True, now_ms=1000).should_shut_down
    again = h.register(1, incarnation="second", now_ms=1500)
    assert again.error_code == 0 and h.image.broker(1).incarnation_id == "second"
