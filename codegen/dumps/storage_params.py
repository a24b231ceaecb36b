"""Paths on the command line that may be URLs of object storage (:mod:`codegen.dumps.storage`).

A local path is checked as ``click.Path(exists=True)`` checks it; a URL is checked by asking its
store, and a store that refuses (no such bucket, credentials it does not take) is a usage error
that says so (exit 2), without the credentials.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from codegen.dumps import storage

__all__ = ["StoragePathParam"]


class StoragePathParam(click.ParamType[storage.StoragePath]):
    """An existing file or folder, local or remote, as a :data:`storage.StoragePath`."""

    name = "path"

    def __init__(self, *, dir_okay: bool = True) -> None:
        self.dir_okay = dir_okay
        self._local = click.Path(exists=True, dir_okay=dir_okay, path_type=Path)

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> storage.StoragePath:
        if isinstance(value, Path | storage.RemotePath) or not storage.is_url(str(value)):
            return Path(self._local.convert(value, param, ctx))
        try:
            found = storage.path(str(value))
            exists = found.exists()
            folder = exists and found.is_dir()
        except storage.StorageError as exc:
            self.fail(str(exc), param, ctx)
        except OSError as exc:
            self.fail(f"cannot read {value}: {exc}", param, ctx)
        if not exists:
            self.fail(f"{value} does not exist (no object or folder there).", param, ctx)
        if folder and not self.dir_okay:
            self.fail(f"{value} is a folder: give a file.", param, ctx)
        return found
