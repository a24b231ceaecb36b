"""Byte mutations for the fuzz tests: what a disk, a network or a buggy writer does to bytes."""

from __future__ import annotations

import struct

from hypothesis import strategies as st

INTERESTING_INTS = (0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, -0x8000, 0x7FFFFFFF, -0x80000000)
"""Values written over length, count and size fields."""


@st.composite
def _mutation(draw: st.DrawFn, data: bytes) -> bytes:
    n = len(data)
    kind = draw(
        st.sampled_from(
            ["flip", "byte", "int", "truncate", "insert", "delete", "duplicate", "append"]
        )
    )
    at = draw(st.integers(0, max(0, n - 1)))
    if kind == "flip" and n:
        return data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1 :]
    if kind == "byte" and n:
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    if kind == "int":
        fmt = draw(st.sampled_from([">b", ">h", ">i", ">q"]))
        width = struct.calcsize(fmt)
        low, high = -(1 << (8 * width - 1)), (1 << (8 * width - 1)) - 1
        value = draw(st.one_of(st.sampled_from(INTERESTING_INTS), st.integers(low, high)))
        packed = struct.pack(fmt, max(low, min(high, value)))
        return data[:at] + packed + data[at + width :]
    if kind == "truncate":
        return data[:at]
    if kind == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=16)) + data[at:]
    if kind == "delete":
        return data[:at] + data[at + draw(st.integers(1, 32)) :]
    if kind == "duplicate":
        end = min(n, at + draw(st.integers(1, 64)))
        return data[:end] + data[at:end] + data[end:]
    return data + draw(st.binary(min_size=1, max_size=32))


@st.composite
def mutated(draw: st.DrawFn, seeds: st.SearchStrategy[bytes], max_mutations: int = 4) -> bytes:
    """Bytes drawn from ``seeds`` with one to ``max_mutations`` mutations applied in turn."""
    data = draw(seeds)
    for _ in range(draw(st.integers(1, max_mutations))):
        data = draw(_mutation(data))
    return data
