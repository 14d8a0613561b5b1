"""SCRAM users in the metadata log: AlterUserScramCredentials writes salted, iterated keys (never
the password or the salted password), replay and snapshots keep them, a deletion removes them,
and bad upsertions are refused per user with Kafka's codes."""

from __future__ import annotations

import msgpack

from clients.errors import ErrorCode
from clients.scram import ScramClient, ScramServer, salted_password
from kraft.controller import messages as m
from kraft.controller.controller import QuorumController
from kraft.metadata import records as r
from kraft.metadata.snapshot import snapshot_from_bytes, snapshot_to_bytes

SALT = b"s" * 16


def _upsert(name, password, mechanism="SCRAM-SHA-256", iterations=4096):
    salted = salted_password(
        mechanism if mechanism.startswith("SCRAM") else "SCRAM-SHA-256", password, SALT, iterations
    )
    return m.ScramCredentialUpsertion(name, mechanism, iterations, SALT, salted)


def _run(controller, request):
    result = controller.handle_alter_user_scram_credentials(request, 0)
    for offset, record in enumerate(result.records, controller.image.offset + 1):
        controller.replay(r.decode(r.encode(record)), offset, 1)
    return result


def test_credentials_are_stored_as_keys_replayed_and_snapshotted():
    controller = QuorumController()
    result = _run(
        controller,
        m.AlterUserScramCredentialsRequest(
            upsertions=(
                _upsert("alice", "pw-alice"),
                _upsert("alice", "pw2", "SCRAM-SHA-512"),
                _upsert("bob", "pw-bob"),
            )
        ),
    )
    assert [x.error_code for x in result.response.results] == [0, 0, 0]
    encoded = b"".join(r.encode(rec) for rec in result.records)
    assert b"pw-alice" not in encoded
    assert _upsert("alice", "pw-alice").salted_password not in encoded

    image = snapshot_from_bytes(snapshot_to_bytes(controller.image), controller.image.offset + 1, 1)
    credential = image.scram_credential("alice", "SCRAM-SHA-256")
    server = ScramServer("SCRAM-SHA-256", lambda name: credential, b"k" * 32)
    client = ScramClient("SCRAM-SHA-256", "alice", "pw-alice")
    client.verify(server.final(client.final(server.first(client.first()))))

    described = controller.handle_describe_user_scram_credentials(
        m.DescribeUserScramCredentialsRequest()
    )
    assert [(x.user, [c.mechanism for c in x.credential_infos]) for x in described.results] == [
        ("alice", ["SCRAM-SHA-256", "SCRAM-SHA-512"]),
        ("bob", ["SCRAM-SHA-256"]),
    ]
    assert "pw" not in str(msgpack.packb(str(described)))

    _run(
        controller,
        m.AlterUserScramCredentialsRequest(
            deletions=(m.ScramCredentialDeletion("bob", "SCRAM-SHA-256"),)
        ),
    )
    assert controller.image.scram_credential("bob", "SCRAM-SHA-256") is None
    missing = controller.handle_describe_user_scram_credentials(
        m.DescribeUserScramCredentialsRequest(("bob",))
    )
    assert missing.results[0].error_code == ErrorCode.RESOURCE_NOT_FOUND


def test_bad_alterations_are_refused_per_user():
    controller = QuorumController()
    result = controller.handle_alter_user_scram_credentials(
        m.AlterUserScramCredentialsRequest(
            deletions=(m.ScramCredentialDeletion("ghost", "SCRAM-SHA-256"),),
            upsertions=(
                _upsert("a", "x", mechanism="PLAIN"),
                _upsert("b", "x", iterations=10),
                _upsert("", "x"),
            ),
        ),
        0,
    )
    assert result.records == []
    assert [x.error_code for x in result.response.results] == [
        ErrorCode.RESOURCE_NOT_FOUND,
        ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        ErrorCode.UNACCEPTABLE_CREDENTIAL,
        ErrorCode.UNACCEPTABLE_CREDENTIAL,
    ]
