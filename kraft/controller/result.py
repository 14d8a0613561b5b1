"""What every controller command returns (records to propose, the response to send once they
commit), the records-in-progress helper commands use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kraft.metadata.delta import MetadataDelta
from kraft.metadata.image import MetadataImage

T = TypeVar("T")


@dataclass(frozen=True)
class ControllerResult(Generic[T]):
    """Records to propose to the metadata log, and the response to send once they commit.
    No records: answer at once (nothing changes)."""

    records: list = field(default_factory=list)
    response: T | None = None


class PendingRecords:
    """The records a command is producing, and the image they lead to, so that a later record
    of the same command sees the earlier ones (fencing two brokers, then electing leaders)."""

    def __init__(self, image: MetadataImage) -> None:
        self.records: list = []
        self._delta = MetadataDelta(image)
        self._image: MetadataImage | None = image

    def append(self, record) -> None:
        self.records.append(record)
        self._delta.replay(record)
        self._image = None

    def extend(self, records) -> None:
        for record in records:
            self.append(record)

    @property
    def image(self) -> MetadataImage:
        if self._image is None:
            self._image = self._delta.apply()
        return self._image
