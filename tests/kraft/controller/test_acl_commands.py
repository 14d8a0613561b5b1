"""CreateAcls and DeleteAcls write AccessControlEntry records that only replay stores; a standby
replaying the log and a snapshot of the image both rebuild the same ACLs."""

from controller_helpers import Harness

from clients.errors import ErrorCode
from kraft.controller.controller import QuorumController
from kraft.controller.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from kraft.metadata import records as r
from kraft.metadata.snapshot import image_to_records, records_to_image
from kraft.security.acl import AclBinding, AclBindingFilter, Permission
from kraft.security.acl import Operation as O
from kraft.security.acl import PatternType as P
from kraft.security.acl import ResourceType as R

ALICE_WRITES = AclBinding(
    R.TOPIC, "alice-", P.PREFIXED, "User:alice", "*", O.WRITE, Permission.ALLOW
)
BOB_READS = AclBinding(R.TOPIC, "bob", P.LITERAL, "User:bob", "*", O.READ, Permission.ALLOW)
BAD = AclBinding(R.TOPIC, "t", P.LITERAL, "bob", "*", O.READ, Permission.ALLOW)


def test_create_writes_one_record_per_new_acl_and_only_replay_stores_it():
    h = Harness()
    result = h.controller.handle_create_acls(CreateAclsRequest((ALICE_WRITES, BOB_READS, BAD)), 0)
    assert [type(rec) for rec in result.records] == [r.AccessControlEntryRecord] * 2
    assert [res.error_code for res in result.response.results] == [0, 0, ErrorCode.INVALID_REQUEST]
    assert "Type:name" in result.response.results[2].error_message
    assert not h.image.acls  # nothing changes before replay
    h.commit(result)
    assert set(h.image.acls.values()) == {ALICE_WRITES, BOB_READS}
    again = h.call("handle_create_acls", CreateAclsRequest((BOB_READS,)))
    assert again.results[0].error_code == 0 and len(h.image.acls) == 2


def test_delete_removes_what_each_filter_matches_and_says_so():
    h = Harness()
    h.call("handle_create_acls", CreateAclsRequest((ALICE_WRITES, BOB_READS)))
    by_alice = AclBindingFilter(principal="User:alice")
    response = h.call("handle_delete_acls", DeleteAclsRequest((by_alice, by_alice)))
    assert [res.matching_acls for res in response.filter_results] == [(ALICE_WRITES,)] * 2
    assert list(h.image.acls.values()) == [BOB_READS]
    assert sum(isinstance(rec, r.RemoveAccessControlEntryRecord) for rec in h.log) == 1


def test_describe_filters_including_match_on_a_resource_name():
    h = Harness()
    h.call("handle_create_acls", CreateAclsRequest((ALICE_WRITES, BOB_READS)))
    match = AclBindingFilter(R.TOPIC, "alice-orders", P.MATCH)
    described = h.call("handle_describe_acls", DescribeAclsRequest((match,)))
    assert described.acls == (ALICE_WRITES,)
    everything = h.call("handle_describe_acls", DescribeAclsRequest((AclBindingFilter(),)))
    assert set(everything.acls) == {ALICE_WRITES, BOB_READS}


def test_a_restarted_controller_rebuilds_the_acls_from_the_log_and_from_a_snapshot():
    h = Harness()
    h.call("handle_create_acls", CreateAclsRequest((ALICE_WRITES, BOB_READS)))
    h.call("handle_delete_acls", DeleteAclsRequest((AclBindingFilter(principal="User:bob"),)))
    restarted = QuorumController()
    restarted.replay_batch(r.decode_batch(r.encode_batch(h.log)), 0, 1)
    assert restarted.image.acls == h.image.acls
    snapshot = r.decode_batch(r.encode_batch(image_to_records(h.image)))
    assert records_to_image(snapshot, h.image.offset, 1).acls == h.image.acls
