"""`from kraft import Producer, ...` gives the very objects the clients' own modules hold, and
importing the log engine (as the broker does) still loads neither grpc nor the clients."""

import importlib
import subprocess
import sys

import pytest

import kraft

OLD_PATHS = {
    "Producer": "clients.producer",
    "AsyncProducer": "clients.producer.producer",
    "RecordMetadata": "clients.producer.future",
    "RecordFuture": "clients.producer.future",
    "BufferFull": "clients.producer.producer",
    "Consumer": "clients.consumer.blocking",
    "AsyncConsumer": "clients.consumer.consumer",
    "ConsumerRebalanceListener": "clients.consumer.coordinator",
    "ConsumerRecord": "clients.consumer.fetcher",
    "Admin": "clients.admin",
    "AsyncAdmin": "clients.admin",
    "NewTopic": "clients.admin",
    "TopicPartition": "clients.types",
    "OffsetAndTimestamp": "clients.types",
    "ConsumerGroupMetadata": "clients.types",
    "KraftError": "clients.errors",
    "RecordTooLarge": "clients.errors",
    "ErrorCode": "clients.errors",
    "SecurityConfigError": "clients.security",
}


def test_every_public_name_has_an_old_path_checked_here():
    assert sorted(OLD_PATHS) == sorted(kraft.__all__)
    assert sorted(OLD_PATHS) == sorted(n for n in kraft._PUBLIC if n != "__version__")


@pytest.mark.parametrize("name", sorted(OLD_PATHS))
def test_a_public_name_is_the_object_at_its_old_path(name):
    old = getattr(importlib.import_module(OLD_PATHS[name]), name)
    assert getattr(kraft, name) is old
    # What `from kraft import name` does: the fromlist lookup on the package.
    assert getattr(__import__("kraft", fromlist=[name]), name) is old


def test_dir_lists_the_public_names_and_an_unknown_one_is_an_attribute_error():
    assert set(kraft.__all__) <= set(dir(kraft))
    with pytest.raises(AttributeError, match="no attribute 'Prodcer'"):
        _ = kraft.Prodcer


def test_the_version_is_the_clients_one():
    import clients

    assert kraft.__version__ == clients.__version__


def test_importing_the_log_engine_loads_no_client_and_no_grpc():
    probe = (
        "import sys, kraft, kraft.log; from kraft import log; "
        "print(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('grpc', 'clients', 'trio')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
