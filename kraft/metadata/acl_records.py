"""An ACL binding (kraft/security/acl.py) as the AccessControlEntryRecord the metadata log stores,
and back: the metadata side knows the bindings, the bindings know no records."""

from __future__ import annotations

from kraft.metadata.records import AccessControlEntryRecord
from kraft.security.acl import AclBinding, Operation, PatternType, Permission, ResourceType


def acl_from_record(rec: AccessControlEntryRecord) -> AclBinding:
    """The binding a record stores; ValueError for numbers this kraft does not know."""
    return AclBinding(
        ResourceType(rec.resource_type),
        rec.resource_name,
        PatternType(rec.pattern_type),
        rec.principal,
        rec.host,
        Operation(rec.operation),
        Permission(rec.permission_type),
    )


def acl_to_record(acl_id: str, b: AclBinding) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        acl_id,
        int(b.resource_type),
        b.resource_name,
        int(b.pattern_type),
        b.principal,
        b.host,
        int(b.operation),
        int(b.permission_type),
    )
