"""Requests for SCRAM users: the password is salted and iterated on the client (as Kafka's
admin client does), so neither the wire nor the metadata log ever carries it."""

from __future__ import annotations

import secrets

from clients.scram import HASHES, check_iterations, salted_password
from clients.wire import controller_pb2 as pb


def scram_upsertion(
    user: str, password: str, mechanism: str, iterations: int
) -> pb.AlterUserScramCredentialsRequest:
    if mechanism not in HASHES:
        raise ValueError(f"mechanism {mechanism!r}: use {' or '.join(HASHES)}")
    if not password:
        raise ValueError("the password is empty")
    check_iterations(iterations)
    salt = secrets.token_bytes(32)
    return pb.AlterUserScramCredentialsRequest(
        upsertions=[
            pb.ScramCredentialUpsertion(
                name=user,
                mechanism=mechanism,
                iterations=iterations,
                salt=salt,
                salted_password=salted_password(mechanism, password, salt, iterations),
            )
        ]
    )


def scram_deletion(user: str, mechanism: str) -> pb.AlterUserScramCredentialsRequest:
    return pb.AlterUserScramCredentialsRequest(
        deletions=[pb.ScramCredentialDeletion(name=user, mechanism=mechanism)]
    )
