"""Code generated from any spec corpus is ``mypy --strict`` clean, not just ``generated/``.

Kafka's corpus has fields that are nullable in some versions only; their writers narrow them
with an assert, and a None written at a version that cannot hold it is still a NullValueError.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpus import ROOT, kafka_specs

from codegen.runtime.errors import NullValueError

# The Kafka release's specs come from `make setup` (tests/corpus.py): oracle-marked.
CORPORA: dict[str, Callable[[], Path]] = {
    "types_kafka_4_4_0": kafka_specs,
    "types_tagged_demo": lambda: ROOT / "tests" / "cases" / "tagged_demo",
}


@pytest.mark.parametrize(
    "package",
    [
        pytest.param("types_kafka_4_4_0", marks=pytest.mark.oracle),
        pytest.param("types_tagged_demo"),
    ],
)
def test_generated_corpus_is_mypy_strict_clean(
    package: str, codec_package: Any, tmp_path: Path
) -> None:
    module = codec_package(package, [CORPORA[package]()])
    folder = Path(module.__file__).parent
    env = dict(os.environ, MYPYPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), folder.name],
        cwd=folder.parent,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


@pytest.mark.oracle
def test_none_in_a_field_this_version_cannot_null_is_a_null_value_error(
    codec_package: Any,
) -> None:
    # MetadataRequestTopic.name is nullable from version 10 only.
    package = codec_package("types_kafka_4_4_0", [kafka_specs()])
    request_cls = package.MESSAGES["MetadataRequest"]
    topic_cls = request_cls._STRUCTS["MetadataRequestTopic"]
    request = request_cls(topics=[topic_cls(name=None)])
    assert request.encode(10)  # fine where it may be null
    with pytest.raises(NullValueError, match=r"MetadataRequest v9.*topics\[0\]\.name"):
        request.encode(9)
