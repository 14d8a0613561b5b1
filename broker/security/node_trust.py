"""Nodes trust only each other: a request that speaks for node N (registration, heartbeat, ISR
change, follower fetch, Raft message) must come from User:kraft-node-N; PLAINTEXT is not checked."""

from __future__ import annotations

import logging
from collections.abc import Collection

from broker.security.principals import node_id_of, node_principal
from clients.grpc_server import RequestContext, request_context
from clients.rate_limited_log import RateLimitedLog

log = logging.getLogger(__name__)
_refusals = RateLimitedLog(logger=log)


def refuse_unless_node(node_id: int, what: str, who: RequestContext | None = None) -> str | None:
    """None when the request's principal speaks for `node_id`, else why not (for the answer's
    CLUSTER_AUTHORIZATION_FAILED message, also logged at most every 10 s per kind). `who`: the
    sender a wire-neutral handler names; none, the request this task serves."""
    who = who or request_context()
    if who.security_protocol == "PLAINTEXT" or node_id_of(who.principal) == node_id:
        return None
    return _refused(
        what,
        f"{who.principal} (from {who.host or 'unknown host'}) may not {what} "
        f"as node {node_id}; only {node_principal(node_id)} may",
    )


def refuse_unless_voter(node_id: int, voters: Collection[int], what: str) -> str | None:
    """Like refuse_unless_node, and `node_id` must be one of the quorum's voters."""
    problem = refuse_unless_node(node_id, what)
    if (
        problem is None
        and request_context().security_protocol != "PLAINTEXT"
        and node_id not in voters
    ):
        problem = _refused(
            what,
            f"node {node_id} may not {what}: it is not a voter "
            f"({', '.join(map(str, sorted(voters)))})",
        )
    return problem


def _refused(what: str, message: str) -> str:
    _refusals.warning(what, "refused (CLUSTER_AUTHORIZATION_FAILED): %s", message)
    return message
