"""``python -m codegen`` and the ``kafka-specgen`` command: see ``python -m codegen --help``."""

from __future__ import annotations

import gc
import sys

from codegen.commands import BUILT_IN_EXTRA, extra_of
from codegen.extras import MissingExtraError


def main() -> None:
    try:
        from codegen.cli import main as cli_main
    except ModuleNotFoundError as exc:
        if exc.name != "click":
            raise
        # The command line comes with an extra: each command's own (codegen.commands).
        command = next((a for a in sys.argv[1:] if not a.startswith("-")), "")
        extra = extra_of(command, "click") or BUILT_IN_EXTRA
        error = MissingExtraError(f"python -m codegen {command}".rstrip(), extra, exc.name)
        print(f"Error: {error}", file=sys.stderr)
        sys.exit(1)
    try:
        cli_main()
    finally:
        # The command is done. The interpreter's teardown runs full garbage collections over
        # every object its imports made (some 400 modules: a fifth of a small dump's
        # command). Frozen objects are left out of them and still freed by reference
        # counting as the modules are cleared: exit status, flushing and closing as before.
        gc.freeze()


if __name__ == "__main__":
    main()
