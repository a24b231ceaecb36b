"""Views of decoded logs computed from Arrow columns: one definition each, run by the command
line (in-process, over the engine's columnar batches) and by Spark (``mapInArrow`` /
``applyInArrow``). pyarrow and numpy only; no pyspark here."""
