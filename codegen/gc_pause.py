"""The cyclic garbage collector paused around work that allocates many objects and makes no
cycles (decoded records and messages, the rows of a report): each collection would only scan
them again, as they grow, and everything else the process holds. Stdlib only, beside the
runtime rather than in it: a message's decode uses it, and so do the command line, dump's loops,
the decoders and the forensics, and the runtime package's imports would cost every command that
reads no log (generate, lint, ``--help``) some 50 ms."""

from __future__ import annotations

import gc
from types import TracebackType

__all__ = ["Program", "freeze_survivors", "gc_paused"]


class gc_paused:
    """``with gc_paused():`` turns the cyclic collector off within and back on after, unless it
    was off already (nested uses, a caller that turned it off). Reference counting frees
    objects as ever; only cycles wait. A class rather than ``@contextmanager``: it is entered
    once per batch in the record loops, where a generator-based manager costs four times
    more."""

    __slots__ = ("_resume",)

    def __enter__(self) -> None:
        self._resume = gc.isenabled()
        if self._resume:
            gc.disable()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._resume:
            gc.enable()


class Program:
    """Whether the command line runs as the process's program (``codegen.cli.main``), where it
    may set up the process for itself; a caller in process (``cli`` invoked from Python) keeps
    its own garbage collector and import system."""

    running = False


def freeze_survivors() -> None:
    """As the process's program, every object alive now moved out of the collector's reach
    (``gc.freeze``): objects made while it was paused (a partition's reports) are all young,
    and the next collection after the pause walked each of them once more, though they make
    no cycles; reference counting still frees them. In process, nothing is frozen."""
    if Program.running:
        gc.freeze()
