"""authorizer.class.name, super.users and allow.everyone.if.no.acl.found as Kafka reads them:
no authorizer by default, any class name turns one on, a malformed super user names the key."""

import pytest

from broker.server.config import ServerConfigError, build_config
from kraft.security.authorizer import STANDARD_AUTHORIZER, AuthorizerConfig


def test_no_authorizer_by_default():
    assert build_config({}).authorizer_config is None


def test_an_authorizer_class_turns_acls_on_with_kafkas_defaults():
    config = build_config(
        {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin;User:broker"}
    )
    assert config.authorizer_config == AuthorizerConfig(
        frozenset({"User:admin", "User:broker"}), allow_everyone_if_no_acl_found=False
    )
    opened = build_config({"authorizer.class.name": "x", "allow.everyone.if.no.acl.found": "true"})
    assert opened.authorizer_config.allow_everyone_if_no_acl_found


def test_a_malformed_super_user_names_the_key():
    with pytest.raises(ServerConfigError, match="super.users"):
        build_config({"super.users": "admin"})
