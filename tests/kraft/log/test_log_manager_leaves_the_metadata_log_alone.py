"""A log dir that also holds the Raft metadata log (`__cluster_metadata-0`, kept by kraft.raft):
LogManager opens the topic partitions beside it but never the metadata partition itself."""

from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.raft.disk import FileRaftLog, metadata_log_dir, quorum_state_path, write_initial


def test_the_metadata_partition_is_not_a_topic_log(tmp_path):
    write_initial(quorum_state_path(tmp_path), [1, 2, 3])
    FileRaftLog(metadata_log_dir(tmp_path), now_ms=0).close()
    manager = LogManager([tmp_path], LogConfig(), now_ms=0)
    manager.get_or_create_log("orders", 0)
    manager.close()

    reopened = LogManager([tmp_path], LogConfig(), now_ms=0)
    try:
        assert set(reopened.logs()) == {("orders", 0)}
        assert (metadata_log_dir(tmp_path) / "quorum-state").exists()
    finally:
        reopened.close()
