"""The analysis driver's heap setting (spark_analysis.heap): large arrays from the heap inside, from
mmap again after, as glibc's own statistics (mallinfo2) count them."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from spark_analysis import heap

SIZE = 64 << 20  # above glibc's largest mmap threshold (32 MiB)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]


def _info(libc) -> _MallInfo2:
    libc.mallinfo2.restype = _MallInfo2
    return libc.mallinfo2()


def _mapped_while_holding(libc) -> int:
    before = _info(libc).hblks
    block = np.empty(SIZE, np.uint8)
    block[::4096] = 1  # touched, as the analysis's arrays are
    mapped = _info(libc).hblks - before
    del block
    return mapped


def test_large_arrays_come_from_the_heap_inside_and_from_mmap_again_after():
    libc = heap._glibc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        pytest.skip("needs glibc 2.33 or later")
    assert _mapped_while_holding(libc) == 1
    with heap.large_array_heap() as applied:
        assert applied
        assert _mapped_while_holding(libc) == 0
        kept = _info(libc).arena
        assert kept >= SIZE  # freed, but kept in the heap
        assert _mapped_while_holding(libc) == 0
        assert _info(libc).arena == kept  # and reused: the heap did not grow
    assert _info(libc).arena < kept  # given back on leaving
    assert _mapped_while_holding(libc) == 1
