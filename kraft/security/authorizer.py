"""StandardAuthorizer: Kafka's ACL decision over an index of bindings by resource, so a check
reads only the ACLs of its resource's name, its wildcard and its prefixes, however many exist.

Kafka's rules, in order: a super user is allowed everything; a matching DENY wins over any
ALLOW; an ALLOW of Read, Write, Delete or Alter also allows Describe, and AlterConfigs allows
DescribeConfigs (a DENY implies nothing); with no ACL at all on the resource the answer is
`allow.everyone.if.no.acl.found` (false by default)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kraft.security.acl import (
    IMPLIED_BY,
    WILDCARD_HOST,
    WILDCARD_RESOURCE,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

# authorizer.class.name values that turn authorization on (Kafka's class name, and ours).
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass(frozen=True)
class AuthorizerConfig:
    """Kafka's keys: `super.users` ("User:admin;User:broker"), `allow.everyone.if.no.acl.found`."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


def parse_super_users(text: str) -> frozenset[str]:
    """Kafka's super.users: principals separated by ';' (',' also accepted)."""
    users = [u.strip() for u in text.replace(",", ";").split(";") if u.strip()]
    for user in users:
        kind, sep, name = user.partition(":")
        if not sep or not kind or not name:
            raise ValueError(
                f"super.users: {user!r} is not of the form Type:name (e.g. User:admin;User:broker)"
            )
    return frozenset(users)


def _wildcard_principal(principal: str) -> str:
    return principal.partition(":")[0] + ":*"


class StandardAuthorizer:
    """Decides on one set of ACLs; build a new one when the ACLs change (it is cheap: one pass)."""

    def __init__(
        self, acls: Iterable[AclBinding], config: AuthorizerConfig = AuthorizerConfig()
    ) -> None:
        self.config = config
        self._literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        # resource type -> prefix -> ACLs, and the prefix lengths present, longest first: a
        # check slices the name at each length instead of trying every prefix.
        self._prefixed: dict[ResourceType, dict[str, list[AclBinding]]] = {}
        self._prefix_lengths: dict[ResourceType, tuple[int, ...]] = {}
        self._by_type: dict[ResourceType, list[AclBinding]] = {}
        for acl in acls:
            self._by_type.setdefault(acl.resource_type, []).append(acl)
            if acl.pattern_type == PatternType.PREFIXED:
                self._prefixed.setdefault(acl.resource_type, {}).setdefault(
                    acl.resource_name, []
                ).append(acl)
            else:
                self._literal.setdefault((acl.resource_type, acl.resource_name), []).append(acl)
        for rtype, prefixes in self._prefixed.items():
            self._prefix_lengths[rtype] = tuple(sorted({len(p) for p in prefixes}, reverse=True))

    def _candidates(self, rtype: ResourceType, name: str) -> list[list[AclBinding]]:
        found = []
        for key in ((rtype, name), (rtype, WILDCARD_RESOURCE)):
            acls = self._literal.get(key)
            if acls:
                found.append(acls)
        prefixes = self._prefixed.get(rtype)
        if prefixes:
            for length in self._prefix_lengths[rtype]:
                if length <= len(name):
                    acls = prefixes.get(name[:length])
                    if acls:
                        found.append(acls)
        return found

    def authorize(
        self, principal: str, host: str, operation: Operation, rtype: ResourceType, name: str
    ) -> bool:
        if principal in self.config.super_users:
            return True
        candidates = self._candidates(rtype, name)
        if not candidates:
            return self.config.allow_everyone_if_no_acl_found
        wildcard = _wildcard_principal(principal)
        implied_by = IMPLIED_BY.get(operation, frozenset())
        allowed = False
        for acls in candidates:
            for acl in acls:
                if acl.principal != principal and acl.principal != wildcard:
                    continue
                if acl.host != host and acl.host != WILDCARD_HOST:
                    continue
                if acl.permission_type == Permission.DENY:
                    if acl.operation == operation or acl.operation == Operation.ALL:
                        return False
                elif (
                    acl.operation == operation
                    or acl.operation == Operation.ALL
                    or acl.operation in implied_by
                ):
                    allowed = True
        return allowed

    def authorize_any(
        self, principal: str, host: str, operation: Operation, rtype: ResourceType
    ) -> bool:
        """Whether `operation` is allowed on some resource of `rtype` (Kafka's
        authorizeByResourceType, simplified: an ALLOW not cancelled by a DENY of the same
        pattern or of the wildcard)."""
        if principal in self.config.super_users:
            return True
        acls = self._by_type.get(rtype, [])
        if not acls:
            return self.config.allow_everyone_if_no_acl_found
        wildcard = _wildcard_principal(principal)

        def applies(acl: AclBinding) -> bool:
            return (
                acl.principal in (principal, wildcard)
                and acl.host in (host, WILDCARD_HOST)
                and acl.operation in (operation, Operation.ALL)
            )

        denied = {
            (a.pattern_type, a.resource_name)
            for a in acls
            if a.permission_type == Permission.DENY and applies(a)
        }
        if (PatternType.LITERAL, WILDCARD_RESOURCE) in denied:
            return False
        return any(
            a.permission_type == Permission.ALLOW
            and applies(a)
            and (a.pattern_type, a.resource_name) not in denied
            for a in acls
        )
