"""The single-node topic catalogue (names, ids, partition counts, config overrides), kept in one
crash-safe JSON file per node. The KRaft metadata log replaces it once the quorum exists."""
from __future__ import annotations

import dataclasses
import json
import pathlib
import uuid

from kraft.fs import atomic_write


@dataclasses.dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: str
    num_partitions: int
    configs: dict[str, str]          # overrides only; defaults come from the broker


class TopicStore:
    FILE_NAME = "topics.json"

    def __init__(self, log_dir: pathlib.Path) -> None:
        self._path = log_dir / self.FILE_NAME
        self._topics: dict[str, TopicInfo] = {}
        if self._path.exists():
            try:
                raw = json.loads(self._path.read_text())
                self._topics = {t["name"]: TopicInfo(**t) for t in raw["topics"]}
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{self._path} is unreadable ({exc}); restore it from a backup or "
                                 "move it away to start with no topics") from None

    def get(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def names(self) -> list[str]:
        return sorted(self._topics)

    def create(self, name: str, num_partitions: int, configs: dict[str, str]) -> TopicInfo:
        info = TopicInfo(name, uuid.uuid4().hex, num_partitions, dict(configs))
        self._topics[name] = info
        self._save()
        return info

    def delete(self, name: str) -> None:
        del self._topics[name]
        self._save()

    def replace(self, info: TopicInfo) -> None:
        self._topics[info.name] = info
        self._save()

    def _save(self) -> None:
        body = {"version": 1, "topics": [dataclasses.asdict(t) for t in self._topics.values()]}
        atomic_write(self._path, json.dumps(body, indent=1).encode())
