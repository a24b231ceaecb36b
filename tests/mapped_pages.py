"""The pages of a file's maps resident in this process (Linux's /proc/self/smaps), for the
tests of reads that give back the mapped pages they have passed."""

from __future__ import annotations

from pathlib import Path


def mapped_rss(path: Path) -> int | None:
    """The bytes of the process's mappings of ``path`` resident now (/proc/self/smaps), None
    where that is not to be read."""
    try:
        lines = Path("/proc/self/smaps").read_text().splitlines()
    except OSError:
        return None
    rss, ours = 0, False
    for line in lines:
        head = line.split()
        if head and "-" in head[0] and not head[0].endswith(":"):  # a mapping's first line
            ours = head[-1] == str(path)
        elif ours and head[0] == "Rss:":
            rss += int(head[1]) * 1024
    return rss
