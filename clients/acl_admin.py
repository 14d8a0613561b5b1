"""ACLs through the admin client (Kafka's createAcls, deleteAcls, describeAcls): bindings and
filters named as kafka-acls prints them (Topic, Read, Allow, Prefixed), numbered on the wire."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clients.errors import KraftError
from clients.wire import controller_pb2

# Kafka's numbers for each name (ResourceType, PatternType, AclOperation, AclPermissionType).
RESOURCE_TYPES = {"Any": 1, "Topic": 2, "Group": 3, "Cluster": 4, "TransactionalId": 5}
PATTERN_TYPES = {"Any": 1, "Match": 2, "Literal": 3, "Prefixed": 4}
OPERATIONS = {
    "Any": 1,
    "All": 2,
    "Read": 3,
    "Write": 4,
    "Create": 5,
    "Delete": 6,
    "Alter": 7,
    "Describe": 8,
    "ClusterAction": 9,
    "DescribeConfigs": 10,
    "AlterConfigs": 11,
    "IdempotentWrite": 12,
}
PERMISSIONS = {"Any": 1, "Deny": 2, "Allow": 3}
CLUSTER_NAME = "kafka-cluster"


def canonical(table: dict[str, int], text: str, what: str) -> str:
    """Kafka's spelling of `text` (any case, '-' or '_' ignored): 'cluster-action' ->
    'ClusterAction'."""
    key = text.replace("-", "").replace("_", "").lower()
    for name in table:
        if name.lower() == key:
            return name
    raise ValueError(
        f"{what} {text!r} is unknown; use one of "
        f"{', '.join(n for n in table if n not in ('Any', 'Match'))}"
    )


def _name(table: dict[str, int], number: int) -> str:
    for name, value in table.items():
        if value == number:
            return name
    return f"Unknown({number})"


@dataclass(frozen=True)
class AclEntry:
    """One ACL: `permission` (Allow/Deny) for `principal` from `host` to do `operation` on the
    resource `resource_type`:`resource_name`, matched `pattern_type` (Literal/Prefixed)."""

    resource_type: str
    resource_name: str
    principal: str
    operation: str
    permission: str = "Allow"
    host: str = "*"
    pattern_type: str = "Literal"

    def to_pb(self) -> controller_pb2.AclBinding:
        return controller_pb2.AclBinding(
            resource_type=RESOURCE_TYPES[
                canonical(RESOURCE_TYPES, self.resource_type, "resource type")
            ],
            resource_name=self.resource_name,
            pattern_type=PATTERN_TYPES[canonical(PATTERN_TYPES, self.pattern_type, "pattern type")],
            principal=self.principal,
            host=self.host,
            operation=OPERATIONS[canonical(OPERATIONS, self.operation, "operation")],
            permission_type=PERMISSIONS[canonical(PERMISSIONS, self.permission, "permission")],
        )

    @classmethod
    def from_pb(cls, b: controller_pb2.AclBinding) -> AclEntry:
        return cls(
            _name(RESOURCE_TYPES, b.resource_type),
            b.resource_name,
            b.principal,
            _name(OPERATIONS, b.operation),
            _name(PERMISSIONS, b.permission_type),
            b.host,
            _name(PATTERN_TYPES, b.pattern_type),
        )


@dataclass(frozen=True)
class AclFilter:
    """Which ACLs to list or delete: None or 'Any' matches everything; pattern_type 'Match'
    finds every ACL that applies to resource_name (literal, '*' and prefixes)."""

    resource_type: str = "Any"
    resource_name: str | None = None
    principal: str | None = None
    operation: str = "Any"
    permission: str = "Any"
    host: str | None = None
    pattern_type: str = "Any"

    def to_pb(self) -> controller_pb2.AclBindingFilter:
        out = controller_pb2.AclBindingFilter(
            resource_type=RESOURCE_TYPES[
                canonical(RESOURCE_TYPES, self.resource_type, "resource type")
            ],
            pattern_type=PATTERN_TYPES[canonical(PATTERN_TYPES, self.pattern_type, "pattern type")],
            operation=OPERATIONS[canonical(OPERATIONS, self.operation, "operation")],
            permission_type=PERMISSIONS[canonical(PERMISSIONS, self.permission, "permission")],
        )
        for field in ("resource_name", "principal", "host"):
            if getattr(self, field) is not None:
                setattr(out, field, getattr(self, field))
        return out


async def create_acls(admin: Any, entries: list[AclEntry]) -> None:
    req = controller_pb2.CreateAclsRequest(creations=[e.to_pb() for e in entries])
    resp = await admin._controller("CreateAcls", req)
    for entry, result in zip(entries, resp.results):
        if result.error_code:
            raise KraftError(result.error_code, result.error_message or f"ACL {entry}")


async def delete_acls(admin: Any, filters: list[AclFilter]) -> list[AclEntry]:
    """The ACLs deleted (each once, however many filters matched it)."""
    resp = await admin._controller(
        "DeleteAcls", controller_pb2.DeleteAclsRequest(filters=[f.to_pb() for f in filters])
    )
    deleted: dict[AclEntry, None] = {}
    for result in resp.filter_results:
        if result.error_code:
            raise KraftError(result.error_code, result.error_message)
        deleted.update(dict.fromkeys(AclEntry.from_pb(b) for b in result.matching_acls))
    return list(deleted)


async def describe_acls(admin: Any, acl_filter: AclFilter = AclFilter()) -> list[AclEntry]:
    resp = await admin._controller(
        "DescribeAcls", controller_pb2.DescribeAclsRequest(filters=[acl_filter.to_pb()])
    )
    return [AclEntry.from_pb(b) for b in resp.acls]
