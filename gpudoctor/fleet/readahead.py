"""Reading a large byte range ahead of ``fleet``'s reader, so that what the page cache lost comes from
the disk while the reader parses what it has."""

from __future__ import annotations

import os
from typing import Optional

WHOLE_BYTES = 1 << 20  # a range (or file) smaller than this is read in one go: nothing to ask for ahead
PREFETCH_BYTES = 8 << 20
AHEAD_BYTES = 256 << 20  # asked for ahead of the reader, at most


class ReadAhead:
    """Asks the kernel to read the next AHEAD_BYTES of a large range ahead while the reader
    parses what it has (posix_fadvise WILLNEED, a hint only: nothing is read here), so that a
    file not in the page cache, or partly evicted from it, comes from the disk meanwhile. A
    window, not the whole range: a job of gigabytes does not fill the page cache ahead of use.
    Called after each read; one request per PREFETCH_BYTES (the kernel caps each request at
    its readahead size)."""

    def __init__(self, fd: int, stop: int, asked: int):
        self.fd, self.stop, self.asked = fd, stop, asked  # asked: where the requests so far end

    @classmethod
    def of(cls, fh, start: int, stop: Optional[int]) -> Optional["ReadAhead"]:
        """For the range from ``start`` to ``stop`` (the end of the file when None) of ``fh``;
        None where there is nothing to ask for (a small range, no posix_fadvise)."""
        if not hasattr(os, "posix_fadvise"):
            return None
        try:
            fd = fh.fileno()
            stop = os.fstat(fd).st_size if stop is None else stop
        except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both
            return None
        if stop - start < WHOLE_BYTES:
            return None
        ahead = cls(fd, stop, start)
        ahead()
        return ahead

    def __call__(self) -> None:
        try:
            until = min(self.stop, os.lseek(self.fd, 0, os.SEEK_CUR) + AHEAD_BYTES)
            while self.asked < until:
                size = min(PREFETCH_BYTES, self.stop - self.asked)
                os.posix_fadvise(self.fd, self.asked, size, os.POSIX_FADV_WILLNEED)
                self.asked += size
        except OSError:
            self.asked = self.stop  # a hint only: no more asking
