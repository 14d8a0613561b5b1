"""A byte range of whole batches in one segment file, not read yet: a fetch reads it straight into
the response it sends, one copy from the page cache into place instead of a read, a slice and more."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class FileSlice:
    fd: int
    position: int
    size: int
    base_offset: int = -1  # of the first batch; -1 when empty

    def __len__(self) -> int:
        return self.size

    def read(self) -> bytes:
        return os.pread(self.fd, self.size, self.position) if self.size else b""

    def read_into(self, view: memoryview) -> None:
        """Fill `view` (exactly `size` bytes) from the file. Read synchronously right after the
        slice was taken: no other task may truncate or delete the segment in between."""
        done = 0
        while done < self.size:
            n = os.preadv(self.fd, [view[done:]], self.position + done)
            if n <= 0:
                raise OSError(
                    f"segment file ended {self.size - done} bytes short of a fetched "
                    f"range at position {self.position}"
                )
            done += n


EMPTY = FileSlice(-1, 0, 0)
