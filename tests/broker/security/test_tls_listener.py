"""A TLS listener over real gRPC: a client certificate signed by the cluster's CA is the request's
principal (User:<CN>, or as ssl.principal.mapping.rules say); a certificate from any other CA,
or none, does not get through the handshake; a plaintext client gets no answer either."""

from __future__ import annotations

import pathlib
import sys

import grpc
import pytest
import trio

from broker.security.listener import authenticator, server_credentials
from clients import bridge
from clients.errors import ErrorCode, KraftError
from clients.grpc_server import TrioGrpcServer
from clients.security import ClientSecurity
from clients.wire import broker_pb2 as pb
from clients.wire import broker_pb2_grpc

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from tls_fixtures import Servicer, make_pki, secure_config  # noqa: E402


async def _serve(nursery, config, listener="SSL"):
    servicer = Servicer()
    server = TrioGrpcServer(
        "127.0.0.1:0",
        listener_name=listener,
        credentials=server_credentials(config.security, listener),
        authenticate=authenticator(config.security, listener),
    )
    server.add_servicer(servicer, pb, "Broker")
    return servicer, await nursery.start(server.serve)


async def _metadata(port: int, security: ClientSecurity | None):
    channel = bridge.open_channel(f"127.0.0.1:{port}", security)
    try:
        return await bridge.call(
            broker_pb2_grpc.BrokerStub(channel).Metadata, pb.MetadataRequest(), 5
        )
    finally:
        channel.close()


def _client(pki, name):
    return ClientSecurity(
        security_protocol="SSL", ssl_cafile=str(pki["ca"]), ssl_certfile=str(pki[name])
    )


async def test_client_certificate_is_the_principal_and_untrusted_ones_are_refused(tmp_path):
    pki = make_pki(tmp_path)
    async with trio.open_nursery() as nursery:
        servicer, port = await _serve(nursery, secure_config(pki))
        assert (await _metadata(port, _client(pki, "alice"))).cluster_id == "c"
        assert (await _metadata(port, _client(pki, "kraft-node-2"))).cluster_id == "c"
        assert [w.principal for w in servicer.seen] == ["User:alice", "User:kraft-node-2"]
        assert servicer.seen[0].security_protocol == "SSL" and servicer.seen[0].listener == "SSL"

        for refused in (
            _client(pki, "rogue-node-2"),  # another CA
            ClientSecurity(security_protocol="SSL", ssl_cafile=str(pki["ca"])),
            None,
        ):  # plaintext
            with pytest.raises(KraftError) as info:
                await _metadata(port, refused)
            assert info.value.code == ErrorCode.NETWORK_EXCEPTION
        assert len(servicer.seen) == 2
        nursery.cancel_scope.cancel()


async def test_principal_mapping_rules_name_the_user(tmp_path):
    pki = make_pki(tmp_path)
    config = secure_config(
        pki, **{"ssl.principal.mapping.rules": "RULE:^CN=(.*?),O=kraft dev$/$1@dev/U,DEFAULT"}
    )
    async with trio.open_nursery() as nursery:
        servicer, port = await _serve(nursery, config)
        await _metadata(port, _client(pki, "alice"))
        assert servicer.seen[0].principal == "User:ALICE@DEV"
        nursery.cancel_scope.cancel()


def test_grpc_reports_the_subject_we_map():
    # The rules match grpc's rendering of the subject: RFC 2253 order, CN first.
    from broker.security.principals import PrincipalRules, common_name

    assert common_name("CN=kraft-node-1,O=kraft dev") == "kraft-node-1"
    assert PrincipalRules().principal("CN=kraft-node-1,O=kraft dev") == "User:kraft-node-1"
    assert PrincipalRules("RULE:^CN=(.*?),.*$/$1/L").principal("CN=Bob,O=x") == "User:bob"
    assert grpc is not None


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (
            {"listener.security.protocol.map": "SSL:SSL,CONTROLLER:SASL_SSL"},
            "CONTROLLER carries node-to-node traffic, and nodes authenticate with certificates",
        ),
        (
            {"listener.name.controller.ssl.client.auth": "none"},
            "set listener.name.controller.ssl.client.auth=required",
        ),
        ({"listener.security.protocol.map": "SSL:SSL"}, "listener CONTROLLER has no protocol"),
        ({"ssl.principal.mapping.rules": "RULE:^CN=(.*$/$1/"}, "is not a regular expression"),
        ({"ssl.keystore.type": "JKS"}, "only PEM is supported"),
        ({"inter.broker.listener.name": "NOPE"}, "inter.broker.listener.name: NOPE is not one of"),
    ],
)
def test_security_config_mistakes_name_the_key(tmp_path, extra, fragment):
    from broker.server.config import ServerConfigError

    pki = make_pki(tmp_path)
    with pytest.raises(ServerConfigError) as info:
        secure_config(pki, **extra)
    assert fragment in str(info.value)


async def test_kafkas_inline_pem_keys_work_like_files(tmp_path):
    # ssl.keystore.key / ssl.keystore.certificate.chain / ssl.truststore.certificates written as
    # Kafka's docs show them: one property over many lines, each ending in a backslash.
    from broker.security.listener import node_client_security
    from broker.server.config import build_config, parse_properties
    from clients.security import split_pem

    pki = make_pki(tmp_path)
    key, chain = split_pem(pki["kraft-node-1"].read_bytes())

    def prop(name: str, pem: bytes) -> str:
        return f"{name}=" + " \\\n    ".join(pem.decode().strip().splitlines()) + "\n"

    text = (
        "node.id=1\nprocess.roles=broker,controller\n"
        "listeners=SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n"
        "listener.security.protocol.map=SSL:SSL,CONTROLLER:SSL\nssl.client.auth=required\n"
        + prop("ssl.keystore.key", key)
        + prop("ssl.keystore.certificate.chain", chain)
        + prop("ssl.truststore.certificates", pki["ca"].read_bytes())
    )
    config = build_config(parse_properties(text))
    assert config.unknown_keys == ()
    async with trio.open_nursery() as nursery:
        servicer, port = await _serve(nursery, config)
        await _metadata(port, node_client_security(config.security, "SSL"))
        assert servicer.seen[0].principal == "User:kraft-node-1"
        nursery.cancel_scope.cancel()
