"""Kafka JSON message specs to Python codecs. Importing this package loads nothing heavy."""

__version__ = "0.1.0"
