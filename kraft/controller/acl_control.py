"""ACL commands (Kafka's AclControlManager): CreateAcls and DeleteAcls return the
AccessControlEntry records to commit, DescribeAcls reads the image; replay stores them."""

from __future__ import annotations

import random
import uuid

from clients.errors import ErrorCode
from kraft.controller.messages import (
    AclCreationResult,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsFilterResult,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from kraft.controller.result import ControllerResult
from kraft.metadata.acl_records import acl_to_record
from kraft.metadata.image import MetadataImage
from kraft.metadata.records import RemoveAccessControlEntryRecord


def create_acls(
    image: MetadataImage, req: CreateAclsRequest, rng: random.Random
) -> ControllerResult[CreateAclsResponse]:
    """Each valid binding not stored yet becomes one record; one already stored succeeds with
    none (as Kafka: creating an ACL twice is not an error)."""
    stored = set(image.acls.values())
    records, results = [], []
    for binding in req.creations:
        problem = binding.problem()
        if problem:
            results.append(
                AclCreationResult(ErrorCode.INVALID_REQUEST, f"{binding.describe()}: {problem}")
            )
            continue
        if binding not in stored:
            stored.add(binding)
            acl_id = uuid.UUID(int=rng.getrandbits(128), version=4).hex
            records.append(acl_to_record(acl_id, binding))
        results.append(AclCreationResult())
    return ControllerResult(records, CreateAclsResponse(tuple(results)))


def delete_acls(
    image: MetadataImage, req: DeleteAclsRequest
) -> ControllerResult[DeleteAclsResponse]:
    records, results, removed = [], [], set()
    for acl_filter in req.filters:
        problem = acl_filter.problem()
        if problem:
            results.append(DeleteAclsFilterResult(ErrorCode.INVALID_REQUEST, problem))
            continue
        matching = []
        for acl_id, binding in sorted(image.acls.items()):
            if acl_filter.matches(binding):
                matching.append(binding)
                if acl_id not in removed:  # two filters may match the same ACL
                    removed.add(acl_id)
                    records.append(RemoveAccessControlEntryRecord(acl_id))
        results.append(DeleteAclsFilterResult(matching_acls=tuple(matching)))
    return ControllerResult(records, DeleteAclsResponse(tuple(results)))


def describe_acls(
    image: MetadataImage, req: DescribeAclsRequest
) -> ControllerResult[DescribeAclsResponse]:
    for acl_filter in req.filters:
        problem = acl_filter.problem()
        if problem:
            return ControllerResult(
                [],
                DescribeAclsResponse(error_code=ErrorCode.INVALID_REQUEST, error_message=problem),
            )
    found = {b for b in image.acls.values() if any(f.matches(b) for f in req.filters)}
    ordered = sorted(
        found,
        key=lambda b: (
            b.resource_type,
            b.resource_name,
            b.pattern_type,
            b.principal,
            b.host,
            b.operation,
            b.permission_type,
        ),
    )
    return ControllerResult([], DescribeAclsResponse(tuple(ordered)))
