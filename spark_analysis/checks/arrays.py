"""Numpy helpers on integer arrays, shared by the property checks and the analysis's metrics.

Sorting, grouping and lookups over millions of rows: each gives what the obvious numpy call gives
(np.unique, np.lexsort, np.searchsorted with a test, a running maximum per group) in a fraction of
its time. Their results must not change with their speed: tests/test_checkers.py holds order_by to
np.lexsort.
"""

from __future__ import annotations

import math
from typing import List, Tuple, Union

import numpy as np

__all__ = ["I64", "INT64_MAX", "group_cummax", "lookup", "member", "order_by", "runs", "shift", "starts", "unique"]

#: the type of every code, time and position
I64 = np.int64
#: later than any time: "never" in minimum reductions (and, negated, "since always")
INT64_MAX = np.iinfo(np.int64).max


def starts(keys: np.ndarray) -> np.ndarray:
    """True where a run of equal keys (in a sorted array) starts."""
    st = np.ones(len(keys), bool)
    if len(keys) > 1:
        st[1:] = keys[1:] != keys[:-1]
    return st


def unique(a, return_inverse: bool = False,
           return_counts: bool = False) -> Union[np.ndarray, Tuple[np.ndarray, ...]]:
    """np.unique by sorting (numpy's hash-based unique of integers is many times slower at
    millions of rows); the same results."""
    a = np.asarray(a)
    if return_inverse:
        order = np.argsort(a)  # ties in any order: the inverse and the counts do not depend on it
        s = a[order]
    else:
        s = np.sort(a)  # a plain sort is many times faster than an argsort (vectorised where the CPU can)
    st = starts(s)
    out = [s[st]]
    if return_inverse:
        inv = np.empty(len(a), I64)
        inv[order] = np.cumsum(st) - 1
        out.append(inv)
    if return_counts:
        out.append(np.diff(np.append(np.flatnonzero(st), len(s))))
    return out[0] if len(out) == 1 else tuple(out)


def order_by(*keys: np.ndarray) -> np.ndarray:
    """The permutation ordering rows by the integer keys (the most significant first), ties in row
    order, as np.lexsort(keys[::-1]) gives it, in a fraction of its time: neighbouring keys whose
    ranges fit in one int64 are combined into one, and each combined key takes one stable sort
    (least significant first); one that spans fewer than 65,536 values takes a radix sort. A
    history already in order per node is nearly sorted, which the stable sort also profits from."""
    if not len(keys[0]):
        return np.zeros(0, I64)
    groups: List[List[Tuple[np.ndarray, int, int]]] = []  # (key, min, span) combined per group
    for k in keys:
        lo = int(k.min())
        span = int(k.max()) - lo + 1
        if groups and math.prod(g[2] for g in groups[-1]) * span < (1 << 62):
            groups[-1].append((k, lo, span))
        else:
            groups.append([(k, lo, span)])
    order = None
    for group in reversed(groups):
        if len(group) == 1 and group[0][2] >= (1 << 16):
            key, span = group[0][0], group[0][2]  # alone and wide: sorted as it is
        else:
            key, span = np.zeros(len(keys[0]), I64), 1
            for k, lo, width in group:
                key = key * width + (k.astype(I64) - lo)
                span *= width
            if span < (1 << 16):
                key = key.astype(np.uint16)
        key = key if order is None else key[order]
        step = np.argsort(key, kind="stable")
        order = step if order is None else order[step]
    return order


def lookup(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Index of each key in sorted_keys, -1 when absent."""
    if not len(sorted_keys):
        return np.full(len(keys), -1, I64)
    i = np.searchsorted(sorted_keys, keys)
    i[i == len(sorted_keys)] = 0
    return np.where(sorted_keys[i] == keys, i, -1)


def member(a: np.ndarray, sorted_b: np.ndarray) -> np.ndarray:
    """a in b, for b sorted."""
    return lookup(sorted_b, a) >= 0


def runs(keys: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(key, start, end) of each run of equal keys in a sorted array."""
    st = np.flatnonzero(starts(keys)) if len(keys) else np.zeros(0, I64)
    return keys[st], st, np.append(st[1:], len(keys))


def group_cummax(values: np.ndarray, run_start: np.ndarray) -> np.ndarray:
    """Running maximum of `values` (ints) restarting at each run start (where `run_start`, as
    `starts` gives it, is True)."""
    if len(values) == 0:
        return values.astype(I64)
    gid = np.cumsum(run_start) - 1
    lo = int(values.min())
    span = int(values.max()) - lo + 1
    shifted = (values.astype(I64) - lo) + gid * span
    return np.maximum.accumulate(shifted) - gid * span + lo


def shift(values: np.ndarray, run_start: np.ndarray, fill: int) -> np.ndarray:
    """The previous element within the run, `fill` at each run start."""
    out = np.empty_like(values)
    if len(values):
        out[0] = fill
        out[1:] = values[:-1]
        out[run_start] = fill
    return out
