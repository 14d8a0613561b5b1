"""ACL bindings and filters with Kafka's enums (same names and numbers as the AclOperation,
ResourceType, PatternType and AclPermissionType of Kafka's clients), and their text forms."""

from __future__ import annotations

import enum
from dataclasses import dataclass

WILDCARD_RESOURCE = "*"  # a LITERAL ACL on "*" matches every resource of its type
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource (Kafka's name for it)


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2  # filters only: LITERAL, wildcard and PREFIXED ACLs that match a name
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class Permission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def camel(value: enum.Enum) -> str:
    """Kafka's spelling of an enum value: CLUSTER_ACTION -> ClusterAction, TOPIC -> Topic."""
    return "".join(part.capitalize() for part in value.name.split("_"))


# Kafka's implied operations: an ALLOW for the key also allows each operation in its set.
IMPLIED_BY: dict[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset(
        {Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
    ),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.ALTER_CONFIGS}),
}


@dataclass(frozen=True)
class AclBinding:
    """One access control entry on one resource pattern: `principal` ("User:alice", "User:*")
    from `host` ("*" for any) is ALLOWed or DENYed `operation` on the resource."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission_type: Permission

    def problem(self) -> str | None:
        """Why this binding cannot be stored (Kafka's checks), or None."""
        for value, allowed, what in (
            (
                self.resource_type,
                (
                    ResourceType.TOPIC,
                    ResourceType.GROUP,
                    ResourceType.CLUSTER,
                    ResourceType.TRANSACTIONAL_ID,
                ),
                "resource type",
            ),
            (self.pattern_type, (PatternType.LITERAL, PatternType.PREFIXED), "pattern type"),
            (self.permission_type, (Permission.ALLOW, Permission.DENY), "permission type"),
        ):
            if value not in allowed:
                return (
                    f"{what} {value.name} cannot be stored; use one of "
                    f"{', '.join(camel(v) for v in allowed)}"
                )
        if self.operation in (Operation.UNKNOWN, Operation.ANY):
            return f"operation {self.operation.name} cannot be stored; name one (e.g. Read)"
        if not self.resource_name:
            return "resource name is empty"
        kind, sep, name = self.principal.partition(":")
        if not sep or not kind or not name:
            return f"principal {self.principal!r} is not of the form Type:name (e.g. User:alice)"
        if not self.host:
            return "host is empty; use '*' for any host"
        if self.resource_type == ResourceType.CLUSTER and (
            self.resource_name != CLUSTER_NAME or self.pattern_type != PatternType.LITERAL
        ):
            return f"the Cluster resource is the literal name {CLUSTER_NAME!r}"
        return None

    def describe(self) -> str:
        pattern = (
            "" if self.pattern_type == PatternType.LITERAL else f" ({camel(self.pattern_type)})"
        )
        return (
            f"{camel(self.permission_type)} {self.principal} from {self.host} to "
            f"{camel(self.operation)} {camel(self.resource_type)}:{self.resource_name}"
            f"{pattern}"
        )


@dataclass(frozen=True)
class AclBindingFilter:
    """Matches bindings, Kafka's way: ANY (or None for names) matches everything; pattern MATCH
    matches the LITERAL, wildcard and PREFIXED bindings that apply to `resource_name`."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission_type: Permission = Permission.ANY

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != b.resource_type:
            return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != Operation.ANY and self.operation != b.operation:
            return False
        if self.permission_type != Permission.ANY and self.permission_type != b.permission_type:
            return False
        return self._matches_pattern(b)

    def _matches_pattern(self, b: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is None:
                return True
            if b.pattern_type == PatternType.PREFIXED:
                return self.resource_name.startswith(b.resource_name)
            return b.resource_name in (self.resource_name, WILDCARD_RESOURCE)
        if self.pattern_type != PatternType.ANY and self.pattern_type != b.pattern_type:
            return False
        return self.resource_name is None or self.resource_name == b.resource_name

    def problem(self) -> str | None:
        """Why this filter cannot select anything (a delete filter must not be UNKNOWN)."""
        for value, what in (
            (self.resource_type, "resource type"),
            (self.pattern_type, "pattern type"),
            (self.operation, "operation"),
            (self.permission_type, "permission type"),
        ):
            if value.name == "UNKNOWN":
                return f"{what} is UNKNOWN in the filter; name one or use ANY"
        return None
