"""AsyncAdmin's security calls (a mixin): SCRAM users through the controller (Kafka's
AlterUserScramCredentials / DescribeUserScramCredentials) and ACLs through acl_admin.py."""

from __future__ import annotations

from clients import acl_admin
from clients.acl_admin import AclEntry, AclFilter
from clients.errors import raise_first
from clients.scram import DEFAULT_ITERATIONS
from clients.user_admin import scram_deletion, scram_upsertion
from clients.wire import controller_pb2


class SecurityCalls:
    """AsyncAdmin's SCRAM and ACL calls; `_controller` is its own."""

    # --- SCRAM users (Kafka's AlterUserScramCredentials / DescribeUserScramCredentials) -----
    async def upsert_user_scram_credential(
        self,
        user: str,
        password: str,
        mechanism: str = "SCRAM-SHA-256",
        iterations: int = DEFAULT_ITERATIONS,
    ) -> None:
        """Create or change a user's password; it is salted and iterated here and never sent."""
        resp = await self._controller(
            "AlterUserScramCredentials", scram_upsertion(user, password, mechanism, iterations)
        )
        raise_first(resp.results, "user")

    async def delete_user_scram_credential(
        self, user: str, mechanism: str = "SCRAM-SHA-256"
    ) -> None:
        resp = await self._controller("AlterUserScramCredentials", scram_deletion(user, mechanism))
        raise_first(resp.results, "user")

    async def describe_user_scram_credentials(
        self, users: list[str] | None = None
    ) -> dict[str, list[tuple[str, int]]]:
        """{user: [(mechanism, iterations), ...]}; every user when `users` is None."""
        resp = await self._controller(
            "DescribeUserScramCredentials",
            controller_pb2.DescribeUserScramCredentialsRequest(users=list(users or ())),
        )
        raise_first(resp.results, "user")
        return {
            r.user: [(c.mechanism, c.iterations) for c in r.credential_infos] for r in resp.results
        }

    # -- ACLs (clients/acl_admin.py)
    async def create_acls(self, entries: list[AclEntry]) -> None:
        await acl_admin.create_acls(self, entries)

    async def delete_acls(self, filters: list[AclFilter]) -> list[AclEntry]:
        return await acl_admin.delete_acls(self, filters)

    async def describe_acls(self, acl_filter: AclFilter = AclFilter()) -> list[AclEntry]:
        return await acl_admin.describe_acls(self, acl_filter)
