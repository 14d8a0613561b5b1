"""Kafka's ACL rules, as a table: literal, wildcard and prefixed patterns, DENY over ALLOW,
super users, hosts, wildcard principals, implied operations and allow.everyone.if.no.acl.found."""

import pytest

from kraft.security.acl import AclBinding, AclBindingFilter, Permission
from kraft.security.acl import Operation as O
from kraft.security.acl import PatternType as P
from kraft.security.acl import ResourceType as R
from kraft.security.authorizer import AuthorizerConfig, StandardAuthorizer, parse_super_users

ALLOW, DENY = Permission.ALLOW, Permission.DENY
LIT, PRE = P.LITERAL, P.PREFIXED


def acl(rtype, name, principal, op, perm=ALLOW, pattern=LIT, host="*"):
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


ACLS = [
    acl(R.TOPIC, "orders", "User:alice", O.WRITE),
    acl(R.TOPIC, "orders", "User:bob", O.READ),
    acl(R.TOPIC, "alice-", "User:alice", O.ALL, pattern=PRE),
    acl(R.TOPIC, "alice-secret", "User:alice", O.READ, DENY),
    acl(R.TOPIC, "*", "User:*", O.DESCRIBE),
    acl(R.TOPIC, "audit", "User:carol", O.READ, host="10.0.0.1"),
    acl(R.TOPIC, "cfg", "User:dave", O.ALTER_CONFIGS),
    acl(R.TOPIC, "blocked", "User:*", O.ALL, DENY),
    acl(R.TOPIC, "blocked", "User:erin", O.READ),
    acl(R.GROUP, "billing-", "User:bob", O.READ, pattern=PRE),
    acl(R.CLUSTER, "kafka-cluster", "User:ops", O.ALTER),
]

CASES = [
    # principal, host, op, resource type, name, expected, why
    ("User:alice", "h", O.WRITE, R.TOPIC, "orders", True, "literal allow"),
    ("User:alice", "h", O.READ, R.TOPIC, "orders", False, "Write does not imply Read"),
    ("User:bob", "h", O.WRITE, R.TOPIC, "orders", False, "bob may only read"),
    ("User:bob", "h", O.READ, R.TOPIC, "orders", True, "literal allow"),
    ("User:alice", "h", O.DELETE, R.TOPIC, "alice-logs", True, "prefixed All"),
    ("User:alice", "h", O.READ, R.TOPIC, "alice-secret", False, "deny wins over prefixed All"),
    ("User:alice", "h", O.WRITE, R.TOPIC, "alice-secret", True, "deny is for Read only"),
    ("User:alice", "h", O.WRITE, R.TOPIC, "alice", False, "shorter than the prefix"),
    ("User:zed", "h", O.DESCRIBE, R.TOPIC, "orders", True, "wildcard name and principal"),
    ("User:zed", "h", O.READ, R.TOPIC, "orders", False, "wildcard allows Describe only"),
    ("User:carol", "10.0.0.1", O.READ, R.TOPIC, "audit", True, "host matches"),
    ("User:carol", "10.0.0.2", O.READ, R.TOPIC, "audit", False, "other host"),
    ("User:bob", "h", O.DESCRIBE, R.TOPIC, "nothing-here", True, "wildcard Describe"),
    ("User:dave", "h", O.DESCRIBE_CONFIGS, R.TOPIC, "cfg", True, "AlterConfigs implies"),
    ("User:dave", "h", O.ALTER, R.TOPIC, "cfg", False, "AlterConfigs is not Alter"),
    ("User:bob", "h", O.DESCRIBE, R.TOPIC, "orders", True, "Read implies Describe"),
    ("User:erin", "h", O.READ, R.TOPIC, "blocked", False, "wildcard DENY All wins"),
    ("User:bob", "h", O.READ, R.GROUP, "billing-eu", True, "prefixed group"),
    ("User:bob", "h", O.DELETE, R.GROUP, "billing-eu", False, "Read is not Delete"),
    ("User:bob", "h", O.READ, R.GROUP, "other", False, "no ACL: denied by default"),
    ("User:ops", "h", O.ALTER, R.CLUSTER, "kafka-cluster", True, "cluster ACL"),
    ("User:ops", "h", O.CLUSTER_ACTION, R.CLUSTER, "kafka-cluster", False, "Alter only"),
    ("User:root", "h", O.DELETE, R.TOPIC, "blocked", True, "super user ignores DENY"),
    ("Group:ops", "h", O.ALTER, R.CLUSTER, "kafka-cluster", False, "principal type counts"),
]


@pytest.mark.parametrize(
    "principal, host, op, rtype, name, expected, why", CASES, ids=[c[-1] for c in CASES]
)
def test_kafka_acl_rules(principal, host, op, rtype, name, expected, why):
    authorizer = StandardAuthorizer(ACLS, AuthorizerConfig(super_users=frozenset({"User:root"})))
    assert authorizer.authorize(principal, host, op, rtype, name) is expected, why


@pytest.mark.parametrize("allow_everyone, expected", [(False, False), (True, True)])
def test_no_acl_found_follows_allow_everyone(allow_everyone, expected):
    authorizer = StandardAuthorizer(
        ACLS, AuthorizerConfig(allow_everyone_if_no_acl_found=allow_everyone)
    )
    assert authorizer.authorize("User:x", "h", O.READ, R.GROUP, "unprotected") is expected
    # Once any ACL names the resource, only the ACLs decide.
    assert authorizer.authorize("User:x", "h", O.READ, R.GROUP, "billing-eu") is False


def test_authorize_any_finds_an_allowed_resource_of_the_type():
    authorizer = StandardAuthorizer(ACLS)
    assert authorizer.authorize_any("User:alice", "h", O.WRITE, R.TOPIC)
    assert not authorizer.authorize_any("User:bob", "h", O.WRITE, R.TOPIC)
    assert not authorizer.authorize_any("User:erin", "h", O.WRITE, R.TRANSACTIONAL_ID)


def test_filters_match_as_kafka_filters_do():
    literal = acl(R.TOPIC, "orders", "User:alice", O.WRITE)
    prefixed = acl(R.TOPIC, "ord", "User:bob", O.READ, pattern=PRE)
    wildcard = acl(R.TOPIC, "*", "User:*", O.DESCRIBE)
    match = AclBindingFilter(R.TOPIC, "orders", P.MATCH)
    assert [b for b in (literal, prefixed, wildcard) if match.matches(b)] == [
        literal,
        prefixed,
        wildcard,
    ]
    exact = AclBindingFilter(R.TOPIC, "orders", P.LITERAL)
    assert [b for b in (literal, prefixed, wildcard) if exact.matches(b)] == [literal]
    assert AclBindingFilter(principal="User:bob").matches(prefixed)
    assert not AclBindingFilter(operation=O.READ).matches(literal)


def test_bindings_kafka_would_refuse_say_why():
    assert "Type:name" in acl(R.TOPIC, "t", "alice", O.READ).problem()
    assert "kafka-cluster" in acl(R.CLUSTER, "other", "User:a", O.ALTER).problem()
    assert "ANY" in AclBinding(R.ANY, "t", LIT, "User:a", "*", O.READ, ALLOW).problem()
    assert acl(R.TOPIC, "t", "User:a", O.READ).problem() is None


def test_super_users_parse_kafka_form():
    assert parse_super_users("User:admin; User:broker") == {"User:admin", "User:broker"}
    with pytest.raises(ValueError, match="Type:name"):
        parse_super_users("admin")
