"""Copy a real tiered-storage broker run into ``tests/data/tiered/`` (see PROVENANCE.md there).

    PYTHONPATH=tests:. python tests/data/tiered/build.py

Runs ``tests/broker/tiered.py``'s broker (Kafka 4.4.0 with LocalTieredStorage: uploads, local
retention, a deleted topic, a broker killed during an upload, a restart) in a temporary folder,
then copies its log folder (``logs/``), its remote storage (``remote/``) and the broker's own
answers (``truth.json``, ``deleted-topic.json``) here. The only change to the files: offset and
time indexes lose their zero tail (a broker preallocates them, 10 MiB, and trims them only as a
segment rolls), as Kafka's ``trimToValidSize`` would.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_ENTRY_SIZES = {".index": 8, ".timeindex": 12}


def _trimmed(data: bytes, entry: int) -> bytes:
    end = len(data) - len(data) % entry
    while end >= entry and not any(data[end - entry : end]):
        end -= entry
    return data[:end]


def copy_tree(source: Path, target: Path) -> None:
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        out = target / rel
        if path.is_dir():
            out.mkdir(parents=True, exist_ok=True)
            continue
        data = path.read_bytes()
        entry = _ENTRY_SIZES.get(path.suffix)
        if entry is not None:
            data = _trimmed(data, entry)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)


def main() -> None:
    from broker.tiered import run_tiered_broker

    with tempfile.TemporaryDirectory(prefix="tiered-run-") as tmp:
        run = run_tiered_broker(Path(tmp) / "run")
        for name in ("logs", "remote"):
            shutil.rmtree(HERE / name, ignore_errors=True)
            copy_tree(run.folder / name, HERE / name)
        for name in ("truth.json", "deleted-topic.json"):
            shutil.copy(run.folder / name, HERE / name)
        for marker in ("pause-uploads", "upload-paused"):  # the test's own, not Kafka's
            (HERE / "remote" / marker).unlink(missing_ok=True)
    print(f"copied a run of {run.seconds:.0f} s into {HERE}", file=sys.stderr)


if __name__ == "__main__":
    main()
