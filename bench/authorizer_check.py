"""What one ACL check costs: StandardAuthorizer (indexed by resource) with 0, 100 and 10,000
ACLs, against a linear scan of the same 10,000, and a RequestAuthorizer check as servicers make
it (request context, image follow). Prints microseconds per check.

    python bench/authorizer_check.py [--acls 10000] [--checks 200000]
"""

from __future__ import annotations

import argparse
import json
import random
import time

from broker.security.request_authorizer import RequestAuthorizer
from clients.grpc_server import RequestContext, serving_as
from kraft.metadata.image import MetadataImage, frozen_map
from kraft.security.acl import AclBinding, Operation, PatternType, Permission, ResourceType
from kraft.security.authorizer import AuthorizerConfig, StandardAuthorizer


def make_acls(count: int, rng: random.Random) -> list[AclBinding]:
    """Users each with a literal topic, a prefixed topic pattern and a group, some DENYs, and a
    wildcard Describe: a spread like a multi-tenant cluster's."""
    acls = [
        AclBinding(
            ResourceType.TOPIC,
            "*",
            PatternType.LITERAL,
            "User:*",
            "*",
            Operation.DESCRIBE,
            Permission.ALLOW,
        )
    ]
    user = 0
    while len(acls) < count:
        name = f"tenant{user}"
        perm = Permission.DENY if rng.random() < 0.05 else Permission.ALLOW
        acls += [
            AclBinding(
                ResourceType.TOPIC,
                f"{name}-orders",
                PatternType.LITERAL,
                f"User:{name}",
                "*",
                Operation.WRITE,
                perm,
            ),
            AclBinding(
                ResourceType.TOPIC,
                f"{name}-",
                PatternType.PREFIXED,
                f"User:{name}",
                "*",
                Operation.READ,
                Permission.ALLOW,
            ),
            AclBinding(
                ResourceType.GROUP,
                name,
                PatternType.LITERAL,
                f"User:{name}",
                "*",
                Operation.READ,
                Permission.ALLOW,
            ),
        ]
        user += 1
    return acls[:count]


def linear_scan(acls, principal, host, op, rtype, name) -> bool:
    """The naive authorizer: every ACL looked at on every check (the baseline)."""
    allowed = False
    for a in acls:
        if a.resource_type != rtype:
            continue
        if a.pattern_type == PatternType.PREFIXED:
            if not name.startswith(a.resource_name):
                continue
        elif a.resource_name not in (name, "*"):
            continue
        if a.principal not in (principal, "User:*") or a.host not in (host, "*"):
            continue
        if a.permission_type == Permission.DENY and a.operation in (op, Operation.ALL):
            return False
        if a.operation in (op, Operation.ALL):
            allowed = True
    return allowed


def per_check_us(check, queries, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        for q in queries:
            check(*q)
    return (time.perf_counter() - start) / (repeat * len(queries)) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--acls", type=int, default=10_000)
    parser.add_argument("--checks", type=int, default=200_000)
    args = parser.parse_args()
    rng = random.Random(7)
    users = max(args.acls // 3, 1)
    queries = []
    for _ in range(1000):
        u, t = rng.randrange(users), rng.randrange(users)
        queries.append(
            (
                f"User:tenant{u}",
                "10.0.0.1",
                rng.choice([Operation.WRITE, Operation.READ]),
                ResourceType.TOPIC,
                f"tenant{t}-orders",
            )
        )
    repeat = max(args.checks // len(queries), 1)
    results = {}
    for count in (0, 100, args.acls):
        authorizer = StandardAuthorizer(make_acls(count, rng), AuthorizerConfig())
        results[f"indexed, {count} ACLs"] = per_check_us(authorizer.authorize, queries, repeat)
    acls = make_acls(args.acls, rng)
    results[f"linear scan, {args.acls} ACLs"] = per_check_us(
        lambda *q: linear_scan(acls, *q), queries[:50], 2
    )
    image = MetadataImage(acls=frozen_map({str(i): a for i, a in enumerate(acls)}))
    request_authz = RequestAuthorizer(lambda: image, AuthorizerConfig())
    with serving_as(RequestContext("User:tenant1", "10.0.0.1")):
        results[f"RequestAuthorizer.allowed, {args.acls} ACLs"] = per_check_us(
            lambda p, h, op, rtype, name: request_authz.allowed(op, rtype, name), queries, repeat
        )
    start = time.perf_counter()
    StandardAuthorizer(acls, AuthorizerConfig())
    results[f"build the index of {args.acls} ACLs (ms, once per ACL change)"] = (
        time.perf_counter() - start
    ) * 1000
    print(json.dumps({k: round(v, 3) for k, v in results.items()}, indent=1))


if __name__ == "__main__":
    main()
