"""Columnar decoding: Arrow binary arrays of Kafka records in, Arrow struct arrays out.

The decode core shared by the command line's columnar views and the Spark layer: a generated
package's codecs (:mod:`~codegen.columnar.package`), the Arrow types of its messages
(:mod:`~codegen.columnar.schema`), the message decoder (:mod:`~codegen.columnar.decode`) and
whole-topic decoding of coordinator and metadata topics (:mod:`~codegen.columnar.topics`).
pyarrow and numpy come with the ``dumps`` extra; no pyspark here.
"""
