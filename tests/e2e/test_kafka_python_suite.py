"""kafka-python's own integration tests (the `test/integration` of its sdist) against a real
kraft node's Kafka listener, as an external broker (KAFKA_URI). The sdist is downloaded and
unpacked into a cache directory at run time (its code is never part of this repository); the
subset that applies to kraft runs in a pytest subprocess, and every test of it must pass.
SUITE lists the subset; LEFT_OUT names every other test of the sdist and why it is left out."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

VERSION = "3.0.12"  # the kafka-python the test extra pins
SDIST = f"kafka_python-{VERSION}"
# kraft advertises a Kafka 3.0 broker's API versions (docs/kafka-clients.md), and the suite's
# version gates (ZooKeeper before 4.0, the 4.x-only APIs) read KAFKA_VERSION.
KAFKA_VERSION = "3.0.0"
CACHE = pathlib.Path(
    os.environ.get("KRAFT_KAFKA_PYTHON_SUITE_CACHE", pathlib.Path.home() / ".cache" / "kraft")
)

ADMIN = "test/integration/test_admin_integration.py::"
CONSUMER = "test/integration/test_consumer_integration.py::"
PRODUCER = "test/integration/test_producer_integration.py::"

SUITE = [
    ADMIN + "test_describe_configs_invalid_broker_id_raises",
    ADMIN + "test_describe_configs_topic_resource_returns_configs",
    ADMIN + "test_describe_group_exists",
    ADMIN + "test_create_delete_topics",
    ADMIN + "test_list_partition_offsets",
    ADMIN + "test_delete_groups",
    ADMIN + "test_delete_groups_with_errors",
    CONSUMER + "test_consumer",
    CONSUMER + "test_consumer_topics",
    CONSUMER + "test_paused",
    CONSUMER + "test_kafka_version_infer",
    CONSUMER + "test_kafka_consumer",
    CONSUMER + "test_kafka_consumer_unsupported_encoding",
    CONSUMER + "test_kafka_consumer__blocking",
    CONSUMER + "test_kafka_consumer__offset_commit_resume",
    CONSUMER + "test_kafka_consumer_max_bytes_simple",
    CONSUMER + "test_kafka_consumer_max_bytes_one_msg",
    CONSUMER + "test_kafka_consumer_offsets_for_time",
    CONSUMER + "test_kafka_consumer_offsets_search_many_partitions",
    CONSUMER + "test_kafka_consumer_offsets_for_times_errors",
    CONSUMER + "test_kafka_consumer_position_after_seek_to_end",
    CONSUMER + "test_group",  # with group.min.session.timeout.ms lowered (NODE_OVERRIDES)
    CONSUMER + "test_heartbeat_thread",
    *(
        PRODUCER + f"{name}[{codec}]"
        for name in ("test_end_to_end", "test_kafka_producer_proper_record_metadata")
        for codec in ("None", "gzip", "snappy", "lz4", "zstd")
    ),
    PRODUCER + "test_idempotent_producer",
    PRODUCER + "test_transactional_producer_messages",
    PRODUCER + "test_idempotent_producer_max_in_flight[1]",
    PRODUCER + "test_idempotent_producer_max_in_flight[2]",
    PRODUCER + "test_idempotent_producer_max_in_flight[5]",
    PRODUCER + "test_idempotent_producer_high_throughput",
    PRODUCER + "test_transactional_producer_offsets",
]

_NOT_SERVED = "the Kafka listener does not serve {} (API key {}); kafka-python raises "
_NOT_SERVED += "IncompatibleBrokerVersion from the ApiVersions answer"
LEFT_OUT = {
    ADMIN + "test_create_partitions": (
        "it names the new partitions' replicas (a manual assignment): kraft places replicas "
        "itself and refuses one with INVALID_REPLICA_ASSIGNMENT"
    ),
    ADMIN + "test_create_describe_delete_acls": _NOT_SERVED.format(
        "CreateAcls/DescribeAcls/DeleteAcls", "30/29/31"
    ),
    ADMIN + "test_describe_configs_broker_resource_returns_configs": (
        "DescribeConfigs of a BROKER resource (type 4): kraft describes topics only, and the "
        "answer holds no configs (the test wants advertised.listeners)"
    ),
    ADMIN + "test_describe_configs_mixed_resources_returns_configs": (
        "a BROKER resource in DescribeConfigs, as above"
    ),
    ADMIN + "test_delete_records": _NOT_SERVED.format("DeleteRecords", 21),
    ADMIN + "test_delete_records_with_errors": _NOT_SERVED.format("DeleteRecords", 21),
    ADMIN + "test_elect_leaders": _NOT_SERVED.format("ElectLeaders", 43),
    ADMIN + "test_describe_log_dirs": _NOT_SERVED.format("DescribeLogDirs", 35),
    ADMIN + "test_alter_replica_log_dirs": _NOT_SERVED.format(
        "DescribeLogDirs/AlterReplicaLogDirs", "35/34"
    ),
    ADMIN + "test_alter_partition_reassignments": _NOT_SERVED.format(
        "AlterPartitionReassignments", 45
    ),
    ADMIN + "test_list_partition_reassignments": _NOT_SERVED.format(
        "ListPartitionReassignments", 46
    ),
    ADMIN + "test_describe_metadata_quorum": (
        "needs a Kafka 4.0 broker (DescribeQuorum, API 55, through a broker); kafka-python "
        "skips it at KAFKA_VERSION 3.0"
    ),
    ADMIN + "test_describe_topic_partitions": (
        "needs a Kafka 4.0 broker (DescribeTopicPartitions, API 75); skipped at 3.0"
    ),
    ADMIN + "test_describe_topic_partitions_pagination": (
        "needs a Kafka 4.0 broker (DescribeTopicPartitions, API 75); skipped at 3.0"
    ),
    ADMIN + "test_list_config_resources": (
        "needs a Kafka 4.1 broker (ListConfigResources, API 74); skipped at 3.0"
    ),
    CONSUMER + "test_kafka_consumer_offsets_for_time_old": (
        "for brokers before 0.10.1 only (kafka-python skips it)"
    ),
    **{
        f"test/integration/test_sasl_integration.py::{name}[{mechanism}]": (
            "spawns its own SASL_PLAINTEXT Kafka broker (Kafka's scripts, SCRAM users through "
            "kafka-storage.sh) and skips itself against an external one; kraft's Kafka "
            "listener has no SASL"
        )
        for name in ("test_admin", "test_produce_and_consume", "test_client")
        for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    },
    **{
        f"test/integration/test_ssl_integration.py::TestSSLConnection::{name}": (
            "spawns its own SSL Kafka broker (a JVM, keytool, ZooKeeper's properties) even "
            "with KAFKA_URI; kraft's Kafka listener has no TLS"
        )
        for name in ("test_ssl_handshake", "test_legacy_kafka_client_ssl")
    },
}

# test_group joins with session.timeout.ms 3000, under Kafka's default floor
# (group.min.session.timeout.ms 6000): the broker the suite runs against must lower it. No
# initial rebalance delay either, so that joins settle within the suite's own timeouts.
NODE_OVERRIDES = ["group.min.session.timeout.ms=1000", "group.initial.rebalance.delay.ms=0"]

# The sdist's fixtures import test.service, which the sdist lacks; only
# ExternalService (the broker at KAFKA_URI) is used here. Without test/__init__.py the
# standard library's `test` package would win the import.
_SERVICE_SHIM = '''"""Written by kraft's suite runner: the sdist lacks test/service.py."""


class ExternalService:
    def __init__(self, host, port):
        self.host, self.port = host, port

    def start(self):
        pass

    def stop(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True


class SpawnedService:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("kraft's suite runner spawns no Kafka or ZooKeeper")
'''


# kafka-python's snappy wants python-snappy, not a test dependency: a plugin loaded into the
# suite's pytest gives it the cramjam-backed stand-in kraft's own tests use.
_SNAPPY_PLUGIN = '''"""Written by kraft's suite runner: python-snappy's calls over cramjam."""
import kafka.codec
from kafka_python_snappy import RawSnappy

kafka.codec.snappy = RawSnappy
'''
TESTS = pathlib.Path(__file__).resolve().parents[1]


def _sdist_tree() -> pathlib.Path:
    """The unpacked sdist in the cache, downloaded on first use; skips naming why if pip
    cannot fetch it (no network, no index)."""
    root = CACHE / f"kafka-python-suite-{VERSION}"
    tree = root / SDIST
    if not (tree / "test" / "integration" / "conftest.py").is_file():
        root.mkdir(parents=True, exist_ok=True)
        archive = root / f"{SDIST}.tar.gz"
        if not archive.is_file():
            got = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
                + [f"kafka-python=={VERSION}", "-d", str(root)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if got.returncode != 0 or not archive.is_file():
                pytest.skip(
                    f"kafka-python {VERSION}'s sdist cannot be downloaded: "
                    + got.stderr.strip()[-500:]
                )
        # Unpacked beside, then renamed into place: a run that dies halfway, or two runs at
        # once, never leave a half tree that looks whole.
        staging = pathlib.Path(tempfile.mkdtemp(dir=root))
        with tarfile.open(archive) as tar:
            tar.extractall(staging, filter="data")
        try:
            os.rename(staging / SDIST, tree)
        except OSError:  # another run's tree got there first
            shutil.rmtree(staging / SDIST)
        staging.rmdir()
    (tree / "test" / "__init__.py").touch()
    (tree / "test" / "service.py").write_text(_SERVICE_SHIM)
    (tree / "kraft_suite_snappy.py").write_text(_SNAPPY_PLUGIN)
    (root / "no-kafka-install").mkdir(exist_ok=True)
    return tree


def _outcomes(junit: pathlib.Path) -> dict[str, str]:
    """Each test's outcome in the junit report, by its node id's name part."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        out[case.get("name")] = kinds[0] if kinds else "passed"
    return out


def test_subset_and_left_out_are_disjoint():
    assert not set(SUITE) & set(LEFT_OUT)
    assert len(set(SUITE)) == len(SUITE)


@pytest.mark.timeout(900)  # a download, a node, then 38 tests of a few seconds
def test_kafka_python_integration_suite_passes_against_kraft(node_factory, tmp_path):
    tree = _sdist_tree()
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "test/integration", "--collect-only", "-q"]
        + ["-p", "no:cacheprovider"],
        cwd=tree,
        env=_env(tree, "tcp://127.0.0.1:1"),
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    ids = {line for line in collected.splitlines() if line.startswith("test/")}
    assert ids, collected[-2000:]
    # Every test of the sdist is either run or left out with its reason.
    assert ids == set(SUITE) | set(LEFT_OUT), ids ^ (set(SUITE) | set(LEFT_OUT))

    node = node_factory(overrides=NODE_OVERRIDES).start()
    assert node.kafka_address, "kraft dev opened no Kafka listener"
    junit = tmp_path / "kafka-python.xml"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *SUITE, f"--junitxml={junit}", "-q", "-rfE"]
        # --tb=native: pytest's own traceback rendering trips over Python 3.11's ast on
        # some of the suite's frames (INTERNALERROR). Its DEBUG log level would bury a failure.
        + ["--tb=native", "-p", "no:cacheprovider", "-o", "log_level=WARNING", "--timeout=120"]
        + ["-W", "ignore::DeprecationWarning", "-p", "kraft_suite_snappy"],
        cwd=tree,
        env=_env(tree, f"tcp://{node.kafka_address}"),
        capture_output=True,
        text=True,
        timeout=780,
    )
    outcomes = _outcomes(junit) if junit.is_file() else {}
    names = [test_id.split("::")[-1] for test_id in SUITE]
    bad = {n: outcomes.get(n, "not run") for n in names if outcomes.get(n) != "passed"}
    assert run.returncode == 0 and not bad, f"{bad}\n{run.stdout[-6000:]}\n{run.stderr[-2000:]}"


def _env(tree: pathlib.Path, kafka_uri: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {
        **env,
        "PYTHONPATH": str(TESTS),  # kafka_python_snappy, for the plugin
        "KAFKA_URI": kafka_uri,
        "KAFKA_VERSION": KAFKA_VERSION,
        # The fixtures insist that a Kafka install exists even for an external broker.
        "KAFKA_ROOT": str(tree.parent / "no-kafka-install"),
    }
