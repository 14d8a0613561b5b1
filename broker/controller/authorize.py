"""Which Controller requests the caller may make: per-item checks for topic and config calls
(refused items answered with their error, the rest carried on), whole-request checks for
cluster calls (ACLs, elections: Alter; node-to-node calls: ClusterAction)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker.security.request_authorizer import RequestAuthorizer
from clients.grpc_server import RequestContext
from kraft.controller import messages as m
from kraft.metadata.image import TOPIC_RESOURCE
from kraft.security.acl import CLUSTER_NAME
from kraft.security.acl import Operation as Op
from kraft.security.acl import ResourceType as R


@dataclass(frozen=True)
class _PerItem:
    items: str  # the request's field of items
    results: str  # the response's field of results
    resource: Callable[[Any], tuple[R, str]]
    operation: Op
    refuse: Callable[[Any, int, str], Any]  # item, code, message -> its result


def _config_resource(res) -> tuple[R, str]:
    if res.resource_type == TOPIC_RESOURCE:
        return R.TOPIC, res.resource_name
    return R.CLUSTER, CLUSTER_NAME  # broker configs belong to the cluster


_PER_ITEM: dict[type, _PerItem] = {
    m.CreateTopicsRequest: _PerItem(
        "topics",
        "topics",
        lambda t: (R.TOPIC, t.name),
        Op.CREATE,
        lambda t, c, e: m.CreateTopicResult(t.name, c, e),
    ),
    m.DeleteTopicsRequest: _PerItem(
        "names",
        "topics",
        lambda n: (R.TOPIC, n),
        Op.DELETE,
        lambda n, c, e: m.DeleteTopicResult(n, c, e),
    ),
    m.CreatePartitionsRequest: _PerItem(
        "topics",
        "topics",
        lambda t: (R.TOPIC, t.name),
        Op.ALTER,
        lambda t, c, e: m.CreatePartitionsResult(t.name, c, e),
    ),
    m.DescribeConfigsRequest: _PerItem(
        "resources",
        "results",
        _config_resource,
        Op.DESCRIBE_CONFIGS,
        lambda r, c, e: m.DescribeConfigsResult(r.resource_type, r.resource_name, c, e),
    ),
    m.IncrementalAlterConfigsRequest: _PerItem(
        "resources",
        "results",
        _config_resource,
        Op.ALTER_CONFIGS,
        lambda r, c, e: m.AlterConfigsResult(r.resource_type, r.resource_name, c, e),
    ),
}

# Whole requests: the operation on the cluster they need.
_CLUSTER_OPERATION: dict[type, Op] = {
    m.CreateAclsRequest: Op.ALTER,
    m.DeleteAclsRequest: Op.ALTER,
    m.DescribeAclsRequest: Op.DESCRIBE,
    m.ElectLeadersRequest: Op.ALTER,
    m.RegisterBrokerRequest: Op.CLUSTER_ACTION,
    m.BrokerHeartbeatRequest: Op.CLUSTER_ACTION,
    m.AlterPartitionRequest: Op.CLUSTER_ACTION,
    m.AllocateProducerIdsRequest: Op.CLUSTER_ACTION,
    # Kafka's rules for SCRAM users: Alter on the cluster to change them, Describe to list them.
    m.AlterUserScramCredentialsRequest: Op.ALTER,
    m.DescribeUserScramCredentialsRequest: Op.DESCRIBE,
}


class Screened:
    """A request with the items the caller may not touch taken out: `request` goes on (None:
    nothing left to send), and `merge` puts the refusals back into its response in order."""

    def __init__(
        self,
        request,
        response_cls: type | None = None,
        spec: _PerItem | None = None,
        items: tuple = (),
        refused: dict[int, Any] | None = None,
    ) -> None:
        self.request = request
        self._response_cls = response_cls
        self._spec = spec
        self._items = items
        self._refused = refused or {}

    def merge(self, response):
        if not self._refused:
            return response
        given = iter(getattr(response, self._spec.results) if response is not None else ())
        results = tuple(
            self._refused[i] if i in self._refused else next(given) for i in range(len(self._items))
        )
        if response is None:
            return self._response_cls(**{self._spec.results: results})
        return dataclasses.replace(response, **{self._spec.results: results})


def screen(
    authz: RequestAuthorizer, request, response_cls: type, who: RequestContext | None = None
) -> Screened:
    """Raises KraftError (CLUSTER_AUTHORIZATION_FAILED) for a refused cluster call. `who`: the
    sender (none: the request this task serves)."""
    operation = _CLUSTER_OPERATION.get(type(request))
    if operation == Op.CLUSTER_ACTION:
        authz.require_cluster_action(who)
        return Screened(request)
    if operation is not None:
        authz.require(operation, R.CLUSTER, who=who)
        return Screened(request)
    spec = _PER_ITEM.get(type(request))
    if spec is None or not authz.enabled:
        return Screened(request)
    create_any = spec.operation == Op.CREATE and authz.allowed(Op.CREATE, R.CLUSTER, who=who)
    items = getattr(request, spec.items)
    refused, kept = {}, []
    for i, item in enumerate(items):
        denial = None if create_any else authz.denial(spec.operation, *spec.resource(item), who)
        if denial is None:
            kept.append(item)
        else:
            refused[i] = spec.refuse(item, *denial)
    if not refused:
        return Screened(request)
    rest = dataclasses.replace(request, **{spec.items: tuple(kept)}) if kept else None
    return Screened(rest, response_cls, spec, items, refused)
