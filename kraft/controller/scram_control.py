"""SCRAM users, the controller's commands: AlterUserScramCredentials turns salted passwords into
StoredKey/ServerKey records; DescribeUserScramCredentials lists users and mechanisms, never keys."""

from __future__ import annotations

from clients.errors import ErrorCode
from clients.scram import HASHES, MAX_ITERATIONS, MIN_ITERATIONS, credential_from_salted
from kraft.controller import messages as m
from kraft.controller.result import ControllerResult
from kraft.metadata import records as r
from kraft.metadata.image import MetadataImage

# Kafka's error codes for a bad credential alteration.
RESOURCE_NOT_FOUND = ErrorCode.RESOURCE_NOT_FOUND
UNSUPPORTED_SASL_MECHANISM = ErrorCode.UNSUPPORTED_SASL_MECHANISM
UNACCEPTABLE_CREDENTIAL = ErrorCode.UNACCEPTABLE_CREDENTIAL


def _problem(name: str, mechanism: str, iterations: int | None = None) -> tuple[int, str] | None:
    if not name:
        return UNACCEPTABLE_CREDENTIAL, "the user name is empty"
    if mechanism not in HASHES:
        return UNSUPPORTED_SASL_MECHANISM, (
            f"mechanism {mechanism!r} is not supported; use {' or '.join(HASHES)}"
        )
    if iterations is not None and not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        return UNACCEPTABLE_CREDENTIAL, (
            f"iterations {iterations} is out of range; use {MIN_ITERATIONS} to {MAX_ITERATIONS}"
        )
    return None


def alter_user_scram_credentials(
    image: MetadataImage, req: m.AlterUserScramCredentialsRequest
) -> ControllerResult[m.AlterUserScramCredentialsResponse]:
    records: list = []
    results = []
    for d in req.deletions:
        problem = _problem(d.name, d.mechanism)
        if problem is None and image.scram_credential(d.name, d.mechanism) is None:
            problem = RESOURCE_NOT_FOUND, f"user {d.name!r} has no {d.mechanism} credential"
        if problem is None:
            records.append(r.RemoveUserScramCredentialRecord(d.name, d.mechanism))
        results.append(m.AlterUserScramCredentialsResult(d.name, *(problem or (0, ""))))
    for u in req.upsertions:
        problem = _problem(u.name, u.mechanism, u.iterations)
        if problem is None and (not u.salt or not u.salted_password):
            problem = UNACCEPTABLE_CREDENTIAL, "the salt or salted password is empty"
        if problem is None:
            c = credential_from_salted(u.mechanism, u.salted_password, u.salt, u.iterations)
            records.append(
                r.UserScramCredentialRecord(
                    u.name, u.mechanism, c.salt, c.stored_key, c.server_key, c.iterations
                )
            )
        results.append(m.AlterUserScramCredentialsResult(u.name, *(problem or (0, ""))))
    return ControllerResult(records, m.AlterUserScramCredentialsResponse(tuple(results)))


def describe_user_scram_credentials(
    image: MetadataImage, req: m.DescribeUserScramCredentialsRequest
) -> m.DescribeUserScramCredentialsResponse:
    by_user: dict[str, list[m.ScramCredentialInfo]] = {}
    for (name, mechanism), c in sorted(image.scram_credentials.items()):
        by_user.setdefault(name, []).append(m.ScramCredentialInfo(mechanism, c.iterations))
    names = req.users or tuple(sorted(by_user))
    results = []
    for name in names:
        if name in by_user:
            results.append(
                m.DescribeUserScramCredentialsResult(name, credential_infos=tuple(by_user[name]))
            )
        else:
            results.append(
                m.DescribeUserScramCredentialsResult(
                    name, RESOURCE_NOT_FOUND, f"user {name!r} has no SCRAM credential"
                )
            )
    return m.DescribeUserScramCredentialsResponse(tuple(results))
