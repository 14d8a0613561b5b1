"""RequestAuthorizer: what every servicer asks before it acts ("may the principal of this request
do Operation on Resource?"), answered from the ACLs of the metadata image the node follows."""

from __future__ import annotations

from collections.abc import Callable

from clients.errors import ErrorCode, KraftError
from clients.grpc_server import RequestContext, request_context
from kraft.metadata.image import MetadataImage
from kraft.security.acl import CLUSTER_NAME, Operation, ResourceType, camel
from kraft.security.authorizer import AuthorizerConfig, StandardAuthorizer

# Kafka's error for a refusal, by the kind of resource refused.
ERROR_OF = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}


def _acl_flag(rtype: ResourceType, name: str) -> str:
    return {
        ResourceType.TOPIC: f"--topic {name}",
        ResourceType.GROUP: f"--group {name}",
        ResourceType.CLUSTER: "--cluster",
        ResourceType.TRANSACTIONAL_ID: f"--transactional-id {name}",
    }[rtype]


def denied_message(
    who: RequestContext, operation: Operation, rtype: ResourceType, name: str
) -> str:
    """Who was refused what, and the command that would allow it."""
    host = f" from host {who.host}" if who.host else ""
    return (
        f"{who.principal}{host} is not authorized to {camel(operation)} "
        f"{camel(rtype)} '{name}'; an administrator can allow it with: kraft acl add "
        f"--allow-principal {who.principal} --operation {camel(operation)} "
        f"{_acl_flag(rtype, name)}"
    )


class RequestAuthorizer:
    """Checks the principal and host of the request this trio task serves. Without a config
    (no authorizer.class.name) every check passes, as in Kafka with no authorizer. The
    authorizer is rebuilt only when the image's ACLs change."""

    def __init__(
        self,
        image: Callable[[], MetadataImage] | None = None,
        config: AuthorizerConfig | None = None,
    ) -> None:
        self._image = image
        self.config = config
        self._acls = None
        self._authorizer: StandardAuthorizer | None = None

    @property
    def enabled(self) -> bool:
        return self.config is not None and self._image is not None

    def _current(self) -> StandardAuthorizer:
        acls = self._image().acls
        if self._authorizer is None or acls is not self._acls:
            self._authorizer = StandardAuthorizer(acls.values(), self.config)
            self._acls = acls
        return self._authorizer

    def allowed(
        self,
        operation: Operation,
        rtype: ResourceType,
        name: str = CLUSTER_NAME,
        who: RequestContext | None = None,
    ) -> bool:
        if not self.enabled:
            return True
        who = who or request_context()
        return self._current().authorize(who.principal, who.host, operation, rtype, name)

    def allowed_any(
        self, operation: Operation, rtype: ResourceType, who: RequestContext | None = None
    ) -> bool:
        """Allowed on some resource of the type (Kafka: Write on any topic lets a producer be
        idempotent)."""
        if not self.enabled:
            return True
        who = who or request_context()
        return self._current().authorize_any(who.principal, who.host, operation, rtype)

    def denial(
        self,
        operation: Operation,
        rtype: ResourceType,
        name: str = CLUSTER_NAME,
        who: RequestContext | None = None,
    ) -> tuple[int, str] | None:
        """(error code, message) when the request may not do it, else None. `who`: the sender
        a wire-neutral handler names (broker/handlers/); none, the request this task serves."""
        if self.allowed(operation, rtype, name, who):
            return None
        return ERROR_OF[rtype], denied_message(who or request_context(), operation, rtype, name)

    def require(
        self,
        operation: Operation,
        rtype: ResourceType,
        name: str = CLUSTER_NAME,
        who: RequestContext | None = None,
    ) -> None:
        refused = self.denial(operation, rtype, name, who)
        if refused is not None:
            raise KraftError(*refused)

    def node_call_denial(self, who: RequestContext | None = None) -> tuple[int, str] | None:
        """For node-to-node calls (registration, heartbeats, ISR changes, follower fetches):
        only a principal with ClusterAction on the cluster, i.e. a node, may make them. The one
        place that decides what a node is (ClusterAction; super users included)."""
        return self.denial(Operation.CLUSTER_ACTION, ResourceType.CLUSTER, who=who)

    def require_cluster_action(self, who: RequestContext | None = None) -> None:
        """node_call_denial() as a KraftError (CLUSTER_AUTHORIZATION_FAILED)."""
        refused = self.node_call_denial(who)
        if refused is not None:
            raise KraftError(*refused)

    def is_node(self, who: RequestContext | None = None) -> bool:
        """Whether the request comes from a node (ClusterAction): a controller trusts a broker
        that forwards a client's call to have authorized that client already."""
        return self.node_call_denial(who) is None


OPEN = RequestAuthorizer()
