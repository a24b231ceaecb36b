"""Tiered storage (KIP-405) from the disk: ``python -m codegen tiered`` and its Python API
(:func:`codegen.tiered.report.tiered_report`), over the view :mod:`codegen.dumps.views.tiered`."""
