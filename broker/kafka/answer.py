"""What a handler hands the writer: a response body as pieces, bytes or ranges of a segment
file. A file range holds its own duplicate of the segment's descriptor, taken when the records
were read, so a segment closed (and its number reused) or deleted before the writer sends it
still sends the very bytes that were read: the inode lives as long as the duplicate."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass
class FileRange:
    fd: int  # this answer's own duplicate: closed by Answer.close
    position: int
    size: int


@dataclass
class Answer:
    pieces: list = field(default_factory=list)  # bytes | FileRange, in order
    closed: bool = False

    @classmethod
    def of(cls, body: bytes) -> Answer:
        return cls([body])

    @property
    def size(self) -> int:
        return sum(p.size if isinstance(p, FileRange) else len(p) for p in self.pieces)

    def add_file(self, fd: int, position: int, size: int) -> None:
        """A range of an open segment, read now: its descriptor is duplicated here."""
        self.pieces.append(FileRange(os.dup(fd), position, size))

    def close(self) -> None:
        """Once sent or dropped; safe twice."""
        if self.closed:
            return
        self.closed = True
        for piece in self.pieces:
            if isinstance(piece, FileRange):
                os.close(piece.fd)
