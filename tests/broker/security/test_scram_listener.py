"""SCRAM over a real SASL_SSL listener: the right password opens a session that later calls
carry (one exchange, not one per request); a wrong password or an unknown user answers
SASL_AUTHENTICATION_FAILED after the failure delay, and a host that keeps failing is refused at
once; a call without a session, or with a session from another host, is not served."""

from __future__ import annotations

import pathlib
import sys
import time

import grpc
import pytest
import trio

from broker.security.listener import authenticator, monotonic_ms, server_credentials
from broker.security.sasl_servicer import SaslServicer
from broker.security.sessions import SessionTable
from broker.security.throttle import FailedAuthThrottle
from clients import bridge
from clients.errors import ErrorCode, KraftError
from clients.grpc_server import TrioGrpcServer
from clients.scram import new_credential
from clients.security import ClientSecurity
from clients.wire import broker_pb2 as pb
from clients.wire import broker_pb2_grpc, security_pb2

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from tls_fixtures import Servicer, make_pki, secure_config  # noqa: E402

CREDENTIALS = {
    ("alice", "SCRAM-SHA-256"): new_credential("SCRAM-SHA-256", "alice-secret"),
    ("alice", "SCRAM-SHA-512"): new_credential("SCRAM-SHA-512", "alice-secret"),
}


async def _serve(nursery, tmp_path, protocol="SASL_SSL"):
    pki = make_pki(tmp_path)
    config = secure_config(
        pki,
        **{
            "listeners": f"{protocol}://127.0.0.1:0,INTERNAL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
            "listener.security.protocol.map": f"{protocol}:{protocol},INTERNAL:SSL,CONTROLLER:SSL",
            "inter.broker.listener.name": "INTERNAL",
            f"listener.name.{protocol.lower()}.ssl.client.auth": "none",
        },
    )
    sessions = SessionTable(60_000)
    sasl = SaslServicer(
        lambda user, mechanism: CREDENTIALS.get((user, mechanism)),
        sessions,
        ("SCRAM-SHA-256", "SCRAM-SHA-512"),
        monotonic_ms,
        failed_delay_ms=100,
        throttle=FailedAuthThrottle(max_failures=3),
    )
    servicer = Servicer()
    server = TrioGrpcServer(
        "127.0.0.1:0",
        listener_name=protocol,
        credentials=server_credentials(config.security, protocol),
        authenticate=authenticator(config.security, protocol, sessions=sessions),
    )
    server.add_servicer(servicer, pb, "Broker")
    server.add_servicer(sasl, security_pb2, "Sasl")
    return pki, servicer, sessions, await nursery.start(server.serve)


def _security(pki, password, mechanism="SCRAM-SHA-256", user="alice", protocol="SASL_SSL"):
    return ClientSecurity(
        security_protocol=protocol,
        ssl_cafile=str(pki["ca"]),
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password,
    )


async def _metadata(channel, times=1):
    stub = broker_pb2_grpc.BrokerStub(channel)
    for _ in range(times):
        await bridge.call(stub.Metadata, pb.MetadataRequest(), 5)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_the_right_password_opens_one_session_for_many_calls(tmp_path, mechanism):
    async with trio.open_nursery() as nursery:
        pki, servicer, sessions, port = await _serve(nursery, tmp_path)
        with bridge.open_channel(
            f"127.0.0.1:{port}", _security(pki, "alice-secret", mechanism)
        ) as channel:
            await _metadata(channel, times=5)
        assert [w.principal for w in servicer.seen] == ["User:alice"] * 5
        assert servicer.seen[0].security_protocol == "SASL_SSL"
        assert len(sessions) == 1  # one exchange for five calls
        nursery.cancel_scope.cancel()


async def test_wrong_password_is_refused_and_throttled(tmp_path):
    async with trio.open_nursery() as nursery:
        pki, servicer, _, port = await _serve(nursery, tmp_path)
        for user, password in (("alice", "wrong"), ("mallory", "alice-secret"), ("alice", "x")):
            started = time.monotonic()
            with bridge.open_channel(
                f"127.0.0.1:{port}", _security(pki, password, user=user)
            ) as channel:
                with pytest.raises(KraftError) as info:
                    await _metadata(channel)
            assert info.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED, info.value
            assert "wrong user name or password" in info.value.message
            assert time.monotonic() - started >= 0.1  # the failure delay
        # Three failures from this host: even the right password waits for the window to pass.
        with bridge.open_channel(f"127.0.0.1:{port}", _security(pki, "alice-secret")) as channel:
            with pytest.raises(KraftError) as info:
                await _metadata(channel)
        assert info.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "too many failed authentications" in info.value.message
        assert servicer.seen == []
        nursery.cancel_scope.cancel()


async def test_calls_without_a_valid_session_are_not_served(tmp_path):
    async with trio.open_nursery() as nursery:
        pki, servicer, sessions, port = await _serve(nursery, tmp_path)
        tls_only = ClientSecurity(security_protocol="SSL", ssl_cafile=str(pki["ca"]))
        with bridge.open_channel(f"127.0.0.1:{port}", tls_only) as channel:
            with pytest.raises(KraftError) as info:
                await _metadata(channel)
            assert info.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
            stub = broker_pb2_grpc.BrokerStub(channel)
            # A token issued to another host, and a made-up one: both unknown here.
            token, _ = sessions.create("User:alice", "10.9.9.9", monotonic_ms())
            for forged in (token, "made-up"):
                call = stub.Metadata.future(
                    pb.MetadataRequest(), timeout=5, metadata=[("kraft-session", forged)]
                )
                with pytest.raises(grpc.RpcError) as rpc:
                    await trio.to_thread.run_sync(call.result)
                assert rpc.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert servicer.seen == []
        nursery.cancel_scope.cancel()


async def test_a_forgotten_session_is_retriable_and_the_next_call_authenticates_again(tmp_path):
    # What a broker restart does to its clients' sessions: the call in flight fails with a
    # retriable NETWORK_EXCEPTION (not SASL_AUTHENTICATION_FAILED), the next one signs in again.
    async with trio.open_nursery() as nursery:
        pki, servicer, sessions, port = await _serve(nursery, tmp_path)
        with bridge.open_channel(f"127.0.0.1:{port}", _security(pki, "alice-secret")) as channel:
            await _metadata(channel)
            sessions.expire(monotonic_ms() + 10**9)
            with pytest.raises(KraftError) as info:
                await _metadata(channel)
            assert info.value.code == ErrorCode.NETWORK_EXCEPTION and info.value.retriable
            await _metadata(channel)
        assert len(servicer.seen) == 2 and len(sessions) == 1
        nursery.cancel_scope.cancel()


async def test_sasl_plaintext_works_without_tls(tmp_path):
    async with trio.open_nursery() as nursery:
        pki, servicer, _, port = await _serve(nursery, tmp_path, protocol="SASL_PLAINTEXT")
        security = _security(pki, "alice-secret", protocol="SASL_PLAINTEXT")
        with bridge.open_channel(f"127.0.0.1:{port}", security) as channel:
            await _metadata(channel)
        assert servicer.seen[0].principal == "User:alice"
        nursery.cancel_scope.cancel()
