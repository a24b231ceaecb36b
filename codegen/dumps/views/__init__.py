"""Views of decoded logs computed from Arrow columns: one definition each, run by the command
line (in-process, over the engine's columnar batches) and by Spark (``mapInArrow`` /
``applyInArrow``). pyarrow and numpy (the ``dumps`` extra) only; no pyspark here."""

from codegen.extras import missing_extra

try:
    import numpy  # noqa: F401
    import pyarrow  # noqa: F401
except ModuleNotFoundError as exc:
    raise missing_extra("the views from columns", "dumps", exc) from None
