"""Parsing of the quantities topology and scenario files use: times, rates and probabilities.

Each parser returns the value in one base unit (milliseconds, Mbit/s, a fraction) or raises
ValueError with the text a user should read; callers add the file, line and field.
"""

from __future__ import annotations

import re
from typing import Any

_TIME = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(us|µs|ms|s|m)?\s*$", re.IGNORECASE)
_TIME_FACTOR_MS = {"us": 0.001, "µs": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0, None: 1.0}

_RATE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([kmg]?)(bit|bps|bit/s|b/s)?\s*$", re.IGNORECASE)
_RATE_FACTOR_MBIT = {"": 1e-6, "k": 1e-3, "m": 1.0, "g": 1e3}

TIME_ALLOWED = "a duration such as 20ms, 1.5s or 300us (a bare number is milliseconds), at least 0"
RATE_ALLOWED = "a rate above 0 such as 10mbit, 500kbit or 1gbit (a bare number is Mbit/s)"
FRACTION_ALLOWED = "a probability from 0 to 1, or a percentage such as 10%"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_time_ms(value: Any) -> float:
    """`20ms`, `1.5s`, `300us` or a bare number of milliseconds → milliseconds (≥ 0)."""
    if _is_number(value):
        number = float(value)
    elif isinstance(value, str):
        match = _TIME.match(value)
        if not match:
            raise ValueError(f"'{value}' is not a duration")
        unit = match.group(2).lower() if match.group(2) else None
        number = float(match.group(1)) * _TIME_FACTOR_MS[unit]
    else:
        raise ValueError(f"{type(value).__name__} {value!r} is not a duration")
    if number < 0:
        raise ValueError(f"{value} is negative")
    return number


def parse_rate_mbit(value: Any) -> float:
    """`10mbit`, `500kbit`, `1gbit`, `10Mbps` or a bare number of Mbit/s → Mbit/s (> 0)."""
    if _is_number(value):
        number = float(value)
    elif isinstance(value, str):
        match = _RATE.match(value)
        if not match or (not match.group(2) and not match.group(3)):
            raise ValueError(f"'{value}' is not a rate")
        number = float(match.group(1)) * _RATE_FACTOR_MBIT[match.group(2).lower()]
    else:
        raise ValueError(f"{type(value).__name__} {value!r} is not a rate")
    if number <= 0:
        raise ValueError(f"{value} is not above 0")
    return number


def parse_fraction(value: Any) -> float:
    """A probability 0..1, or `10%` → 0.1."""
    if _is_number(value):
        number = float(value)
        shown = value
    elif isinstance(value, str) and value.strip().endswith("%"):
        try:
            number = float(value.strip()[:-1]) / 100.0
        except ValueError:
            raise ValueError(f"'{value}' is not a percentage") from None
        shown = value
    else:
        raise ValueError(f"{value!r} is not a probability")
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{shown} is outside [0, 1]")
    return number
