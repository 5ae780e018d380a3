"""Parsing of the quantities topology and scenario files use: times, rates and probabilities.

Each parser returns the value in one base unit (milliseconds, Mbit/s, a fraction) or raises
ValueError with the text a user should read; callers add the file, line and field. Every value is
finite and bounded here, so that nothing downstream (time.sleep, tc) overflows or refuses it after
the network is built: YAML reads `.inf` and `.nan` as floats.
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any

_TIME = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(us|µs|ms|s|m)?\s*$", re.IGNORECASE)
_TIME_FACTOR_MS = {"us": 0.001, "µs": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0, None: 1.0}

_RATE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([kmg]?)(bit|bps|bit/s|b/s)?\s*$", re.IGNORECASE)
_RATE_FACTOR_MBIT = {"": 1e-6, "k": 1e-3, "m": 1.0, "g": 1e3}

#: The longest duration (a scenario's duration, warm-up, quiet period, timeline times): a year.
#: Far below what time.sleep and threading accept (threading.TIMEOUT_MAX, about 292 years).
MAX_TIME_MS = 365 * 24 * 3600 * 1000.0
#: The longest link delay or jitter. netem counts both in 32-bit ticks of 64 ns, so tc (iproute2
#: 6.1) refuses more than 274.877 s ("Illegal ... time (too large)"); 240 s is a round figure inside.
MAX_DELAY_MS = 240_000.0
#: The slowest and fastest link. tc's tbf (bandwidth without netem) refuses a rate below 8 bit/s,
#: and below about 1kbit its burst no longer holds a frame; with the burst the shaper computes it
#: took up to 1tbit here and failed at 10tbit. 100gbit is well above what a veth pair carries.
MIN_RATE_MBIT = 0.001
MAX_RATE_MBIT = 100_000.0

TIME_ALLOWED = "a duration from 0 to 365 days such as 20ms, 1.5s or 300us (a bare number is milliseconds)"
DELAY_ALLOWED = "a delay from 0 to 240s such as 20ms, 1.5s or 300us (a bare number is milliseconds)"
RATE_ALLOWED = "a rate from 1kbit to 100gbit such as 10mbit, 500kbit or 1gbit (a bare number is Mbit/s)"
FRACTION_ALLOWED = "a probability from 0 to 1, or a percentage such as 10%"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _float(value: Any) -> float:
    """float(value); an int too large for a float becomes the largest float, which is out of every
    range, instead of an OverflowError."""
    try:
        return float(value)
    except OverflowError:
        return sys.float_info.max if value > 0 else -sys.float_info.max


def _finite(number: float, shown: Any) -> float:
    if math.isnan(number):
        raise ValueError(f"{shown} is not a number")
    if math.isinf(number):
        raise ValueError(f"{shown} is not finite")
    return number


def parse_time_ms(value: Any, maximum_ms: float = MAX_TIME_MS) -> float:
    """`20ms`, `1.5s`, `300us` or a bare number of milliseconds → milliseconds (0 to maximum_ms)."""
    if _is_number(value):
        number = _float(value)
    elif isinstance(value, str):
        match = _TIME.match(value)
        if not match:
            raise ValueError(f"'{value}' is not a duration")
        unit = match.group(2).lower() if match.group(2) else None
        number = float(match.group(1)) * _TIME_FACTOR_MS[unit]
    else:
        raise ValueError(f"{type(value).__name__} {value!r} is not a duration")
    _finite(number, value)
    if number < 0:
        raise ValueError(f"{value} is negative")
    if number > maximum_ms:
        longest = f"{maximum_ms / 86_400_000:g} days" if maximum_ms >= 86_400_000 else f"{maximum_ms / 1000:g}s"
        raise ValueError(f"{value} is longer than {longest}")
    return number


def parse_delay_ms(value: Any) -> float:
    """A link's delay or jitter: a duration of at most MAX_DELAY_MS, which netem accepts."""
    return parse_time_ms(value, MAX_DELAY_MS)


def parse_rate_mbit(value: Any) -> float:
    """`10mbit`, `500kbit`, `1gbit`, `10Mbps` or a bare number of Mbit/s → Mbit/s (1kbit to 100gbit)."""
    if _is_number(value):
        number = _float(value)
    elif isinstance(value, str):
        match = _RATE.match(value)
        if not match or (not match.group(2) and not match.group(3)):
            raise ValueError(f"'{value}' is not a rate")
        number = float(match.group(1)) * _RATE_FACTOR_MBIT[match.group(2).lower()]
    else:
        raise ValueError(f"{type(value).__name__} {value!r} is not a rate")
    _finite(number, value)
    if number <= 0:
        raise ValueError(f"{value} is not above 0")
    if number < MIN_RATE_MBIT:
        raise ValueError(f"{value} is below 1kbit")
    if number > MAX_RATE_MBIT:
        raise ValueError(f"{value} is above 100gbit")
    return number


def parse_fraction(value: Any) -> float:
    """A probability 0..1, or `10%` → 0.1."""
    if _is_number(value):
        number = _float(value)
        shown = value
    elif isinstance(value, str) and value.strip().endswith("%"):
        try:
            number = float(value.strip()[:-1]) / 100.0
        except ValueError:
            raise ValueError(f"'{value}' is not a percentage") from None
        shown = value
    else:
        raise ValueError(f"{value!r} is not a probability")
    _finite(number, shown)
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{shown} is outside [0, 1]")
    return number


_DISTANCE = re.compile(r"^\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(m|km)?\s*$", re.IGNORECASE)
#: positions, areas and ranges are bounded so that squared distances stay exact in a float
MAX_DISTANCE_M = 1e7
DISTANCE_ALLOWED = "a distance from 0 to 10000km such as 120, 120m or 1.5km (a bare number is metres)"
COORDINATE_ALLOWED = "a number of metres from -10000km to 10000km"


def parse_distance_m(value: Any) -> float:
    """`120`, `120m` or `1.5km` → metres (0 to MAX_DISTANCE_M)."""
    number = parse_coordinate_m(value)
    if number < 0:
        raise ValueError(f"{value} is negative")
    return number


def parse_coordinate_m(value: Any) -> float:
    """A coordinate in metres (may be negative): `-20`, `35.5m`, `1.2km`."""
    if _is_number(value):
        number = _float(value)
    elif isinstance(value, str):
        match = _DISTANCE.match(value)
        if not match:
            raise ValueError(f"'{value}' is not a distance")
        number = float(match.group(1)) * (1000.0 if (match.group(2) or "").lower() == "km" else 1.0)
    else:
        raise ValueError(f"{type(value).__name__} {value!r} is not a distance")
    _finite(number, value)
    if abs(number) > MAX_DISTANCE_M:
        raise ValueError(f"{value} is beyond 10000km")
    return number


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|kb|kib|mb|mib|gb|gib)\s*$", re.IGNORECASE)
_SIZE_FACTOR = {"b": 1, "kb": 1e3, "kib": 1024, "mb": 1e6, "mib": 1024 ** 2, "gb": 1e9, "gib": 1024 ** 3}


def parse_size_bytes(value: Any) -> float:
    """`200B`, `1.5kB`, `64KiB`, `1MB` or a bare number of bytes → bytes."""
    if _is_number(value):
        number = _float(value)
    elif isinstance(value, str):
        match = _SIZE.match(value)
        if not match:
            raise ValueError(f"'{value}' is not a size")
        number = float(match.group(1)) * _SIZE_FACTOR[match.group(2).lower()]
    else:
        raise ValueError(f"{type(value).__name__} {value!r} is not a size")
    _finite(number, value)
    if number < 0:
        raise ValueError(f"{value} is negative")
    return number


#: the kinds of quantity a list of values is read as, in the order they are tried: (kind, base
#: unit, parser giving the base unit). A bare number is the parser's own unit (ms, Mbit/s, bytes,
#: a fraction, metres), as in a scenario file.
QUANTITIES = (
    ("duration", "s", lambda v: parse_time_ms(v) / 1000.0),
    ("rate", "bit/s", lambda v: parse_rate_mbit(v) * 1e6),
    ("size", "B", parse_size_bytes),
    ("probability", "", parse_fraction),
    ("distance", "m", parse_distance_m),
)


def quantities(values: Any) -> Any:
    """Read a list of values as one kind of quantity: (kind, base unit, the values in that unit),
    the first kind of QUANTITIES that reads every value, when at least one value is text with a
    unit (`50s`, `10%`, `64KiB`); ("number", "", the values) when all are plain numbers; None
    otherwise (names, lists, or quantities of different kinds)."""
    values = list(values)
    if values and all(_is_number(v) for v in values):
        return "number", "", [_float(v) for v in values]
    if not values or not all(_is_number(v) or isinstance(v, str) for v in values):
        return None
    for kind, unit, parse in QUANTITIES:
        try:
            return kind, unit, [parse(v) for v in values]
        except ValueError:
            continue
    return None
