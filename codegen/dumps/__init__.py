"""Topic dumps: Kafka log segments and KRaft snapshots, read without the broker.

The segment layer (this package's ``compression``, ``model``, ``batches``, ``segments`` and
``writer`` modules) knows nothing about message specs: record keys and values stay raw bytes.
"""

from codegen.dumps.batches import (
    DEFAULT_MAX_BATCH_RECORDS,
    decode_entry,
    decode_entry_raw,
    decode_legacy_message,
    parse_control_key,
    parse_end_txn_marker,
)
from codegen.dumps.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Codec,
    CompressionError,
    compress,
    decompress,
    decompressed_size_bound,
)
from codegen.dumps.model import (
    BatchHeader,
    ControlRecord,
    ControlType,
    ErrorKind,
    Header,
    RawRecord,
    Record,
    RecordBatch,
    SegmentError,
    SegmentSummary,
    TimestampType,
)
from codegen.dumps.segments import (
    SegmentFileInfo,
    SegmentReader,
    Source,
    iter_raw_records,
    read_segment,
    segment_file_info,
    segment_files,
    summarize,
)
from codegen.dumps.writer import (
    NewRecord,
    SegmentWriter,
    encode_control_batch,
    encode_legacy_entry,
    encode_record_batch,
)

__all__ = [
    "DEFAULT_MAX_BATCH_RECORDS",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "BatchHeader",
    "Codec",
    "CompressionError",
    "ControlRecord",
    "ControlType",
    "ErrorKind",
    "Header",
    "NewRecord",
    "RawRecord",
    "Record",
    "RecordBatch",
    "SegmentError",
    "SegmentFileInfo",
    "SegmentReader",
    "SegmentSummary",
    "SegmentWriter",
    "Source",
    "TimestampType",
    "compress",
    "decode_entry",
    "decode_entry_raw",
    "decode_legacy_message",
    "decompress",
    "decompressed_size_bound",
    "encode_control_batch",
    "encode_legacy_entry",
    "encode_record_batch",
    "iter_raw_records",
    "parse_control_key",
    "parse_end_txn_marker",
    "read_segment",
    "segment_file_info",
    "segment_files",
    "summarize",
]
