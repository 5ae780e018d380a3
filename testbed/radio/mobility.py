"""Where each node of a radio segment is at model time t (seconds since the experiment started).

A `Track` is the movement of one node as piecewise-linear legs between key points in model time;
the radio ticker asks every node's track for its position every tick (`Track.at`). Tracks come
from three sources, all deterministic:

- `static(position)`: the node stays where it is put;
- `random_waypoint(...)`: the classic random-waypoint model (as ns-2's setdest and BonnMotion
  define it), drawn from a random stream seeded by the experiment's seed and the node's name, so
  that a node's path is the same in every process and does not depend on the other nodes. Its
  legs are drawn lazily, as later times are asked for, and remembered;
- trace files: ns-2 movement files (`parse_ns2`: what ns-2's setdest, BonnMotion's NSFile export
  and SUMO's traceExporter write) and CSV samples (`parse_csv`), read by `load_trace`.

The `move` timeline action replaces a node's mobility from a given time on (`Track.redirect`).

Decisions the trace formats leave open, taken here:

- ns-2: an `$ns_ at T "$node_(i) set X_ v"` line (a jump of one coordinate) also stops a movement
  in progress; the node stays at the new position until its next setdest. A setdest with speed 0
  stops the node where it is. Events of one node at the same time apply in file order.
- CSV: blank lines and lines starting with `#` are skipped; two samples of a node at the same time
  and position are one sample.

Trace problems are reported as `ValidationError`s with field "trace" and the trace's line number;
bad model parameters as `ValueError`s, which the topology reader turns into located errors.
"""

from __future__ import annotations

import math
import os
import random
import re
from bisect import bisect_right
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import ValidationError

Point = Tuple[float, float, float]   # x, y, z in metres

#: (model time, position): one key point of a track
Key = Tuple[float, Point]

TRACE_FIELD = "trace"
FORMATS = ("ns2", "csv")


class Track:
    """The movement of one node as piecewise-linear legs in model time (seconds).

    Key points are kept in non-decreasing time; between two consecutive ones the node moves in a
    straight line at constant speed; two key points at the same time are a jump (at that time
    the node is at the later one). Before the first key point the node is at the first position;
    after the last, at the last position, unless the track has a source of more key points (a
    random waypoint model), which is drawn from as later times are asked for.
    """

    __slots__ = ("_times", "_points", "_more", "_cursor", "_info", "_moves")

    def __init__(self, keys: Sequence[Key], info: Dict[str, Any],
                 more: Optional[Iterator[Key]] = None) -> None:
        if not keys:
            raise ValueError("a track needs at least one key point")
        self._times: List[float] = []
        self._points: List[Point] = []
        for t, p in keys:
            self._add(float(t), _point(p))
        self._more = more
        self._cursor = 0
        self._info = dict(info)
        self._moves: List[Dict[str, Any]] = []

    def _add(self, t: float, p: Point) -> None:
        if self._times:
            if t < self._times[-1]:
                raise ValueError(f"key point at {t} s is before the previous one ({self._times[-1]} s)")
            if t == self._times[-1] and p == self._points[-1]:
                return
        self._times.append(t)
        self._points.append(p)

    def _extend(self, t: float) -> None:
        """Draw key points from the model until one lies after t (or the model ends)."""
        more = self._more
        times = self._times
        while more is not None and times[-1] <= t:
            try:
                key_t, key_p = next(more)
            except StopIteration:
                self._more = more = None
                break
            self._add(key_t, key_p)

    def at(self, t: float) -> Point:
        """The position at model time t (the first position before the track starts, the last
        one after it ends)."""
        times = self._times
        if t >= times[-1]:
            if self._more is None:
                return self._points[-1]
            self._extend(t)
            if t >= times[-1]:
                return self._points[-1]
        if t < times[0]:
            return self._points[0]
        # from here: times[0] <= t < times[-1], so there are two key points around t
        i = self._cursor
        if not times[i] <= t < times[i + 1]:
            i += 1
            if not (i + 1 < len(times) and times[i] <= t < times[i + 1]):
                i = bisect_right(times, t) - 1
            self._cursor = i
        p0 = self._points[i]
        p1 = self._points[i + 1]
        if p0 == p1:
            return p0
        t0 = times[i]
        f = (t - t0) / (times[i + 1] - t0)
        return (p0[0] + (p1[0] - p0[0]) * f, p0[1] + (p1[1] - p0[1]) * f, p0[2] + (p1[2] - p0[2]) * f)

    def redirect(self, t: float, to: Point, speed: Optional[float]) -> None:
        """From time t, the node goes from where it is at t straight to `to` at `speed` m/s (None
        or inf: it is there at once), then stays there; whatever the track planned after t is
        dropped (this is the `move` timeline action: it replaces the node's mobility from then
        on)."""
        t = float(t)
        if not (math.isfinite(t) and t >= 0):
            raise ValueError(f"a move's time must be a finite number of seconds >= 0, got {t}")
        target = _point(to)
        if not all(math.isfinite(c) for c in target):
            raise ValueError(f"a move's destination must be finite, got {list(target)}")
        if speed is not None:
            speed = float(speed)
            if not speed > 0:
                raise ValueError(f"a move's speed must be > 0 m/s (or none: at once), got {speed}")
            if math.isinf(speed):
                speed = None
        here = self.at(t)
        keep = bisect_right(self._times, t)
        del self._times[keep:]
        del self._points[keep:]
        self._more = None
        self._cursor = 0
        self._add(t, here)
        if speed is None:
            self._add(t, target)
        else:
            self._add(t + _distance(here, target) / speed, target)
        self._moves = [m for m in self._moves if m["at"] <= t]
        self._moves.append({"at": t, "to": list(target), "speed": speed})

    def describe(self) -> Dict[str, Any]:
        """A JSON-able summary for the run manifest: the model and its parameters, and the moves
        that replaced it from some time on."""
        out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self._info.items()}
        if self._moves:
            out["moves"] = [dict(m, to=list(m["to"])) for m in self._moves]
        return out


def _point(p: Sequence[float]) -> Point:
    if len(p) != 3:
        raise ValueError(f"a position is (x, y, z) in metres, got {p!r}")
    return (float(p[0]), float(p[1]), float(p[2]))


def _distance(a: Point, b: Point) -> float:
    return math.sqrt((b[0] - a[0]) ** 2 + (b[1] - a[1]) ** 2 + (b[2] - a[2]) ** 2)


def _lerp(a: Point, b: Point, f: float) -> Point:
    return (a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f)


# --- static -------------------------------------------------------------------------------------

def static(position: Point) -> Track:
    """A node that stays at `position`."""
    p = _point(position)
    if not all(math.isfinite(c) for c in p):
        raise ValueError(f"a position must be finite, got {list(p)}")
    return Track([(0.0, p)], {"model": "static", "position": list(p)})


# --- random waypoint ----------------------------------------------------------------------------

def _range(name: str, value: Sequence[float], unit: str) -> Tuple[float, float]:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair [min, max] of numbers ({unit}), got {value!r}") from None
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"{name} must be finite, got [{low}, {high}]")
    if low > high:
        raise ValueError(f"{name}: min {low} is greater than max {high}")
    return low, high


def _waypoints(rng: random.Random, area: Tuple[Tuple[float, float], Tuple[float, float]],
               speed: Tuple[float, float], pause: Tuple[float, float], here: Point) -> Iterator[Key]:
    """The key points after the start: arrive at a destination, then (if it pauses) leave it."""
    (x0, y0), (x1, y1) = area
    t = 0.0
    while True:
        # min/max: uniform() may round a hair past the upper bound
        dest = (min(max(rng.uniform(x0, x1), x0), x1), min(max(rng.uniform(y0, y1), y0), y1), here[2])
        v = rng.uniform(speed[0], speed[1])
        t += _distance(here, dest) / v
        yield t, dest
        wait = rng.uniform(pause[0], pause[1])
        if wait > 0:
            t += wait
            yield t, dest
        here = dest


def random_waypoint(seed: int, node: str, area: Tuple[Tuple[float, float], Tuple[float, float]],
                    speed: Tuple[float, float], pause: Tuple[float, float], start: Optional[Point] = None,
                    z: float = 0.0) -> Track:
    """The random waypoint model: from `start` (else a uniformly random point of the area), the node
    repeatedly picks a destination uniformly in the area, a speed uniformly in [min, max] m/s,
    goes there in a straight line, and pauses for a time uniform in [min, max] s.

    `area` is two opposite corners ((x0, y0), (x1, y1)) with x0 < x1 and y0 < y1. The node moves
    at a constant height: start's z if a start is given, else `z`. The random stream is
    `random.Random(f"{seed}/{node}")`, so a node's path depends on the seed and its name only.
    """
    try:
        (x0, y0), (x1, y1) = ((float(c) for c in corner) for corner in area)
    except (TypeError, ValueError):
        raise ValueError(f"area must be two corners ((x0, y0), (x1, y1)) in metres, got {area!r}") from None
    if not all(math.isfinite(c) for c in (x0, y0, x1, y1)):
        raise ValueError(f"area must be finite, got (({x0}, {y0}), ({x1}, {y1}))")
    if not (x0 < x1 and y0 < y1):
        raise ValueError(f"area (({x0}, {y0}), ({x1}, {y1})) is empty: it needs x0 < x1 and y0 < y1")
    speeds = _range("speed", speed, "m/s")
    if speeds[0] <= 0:
        raise ValueError(f"speed must be > 0 m/s, got min {speeds[0]}")
    pauses = _range("pause", pause, "s")
    if pauses[0] < 0:
        raise ValueError(f"pause must be >= 0 s, got min {pauses[0]}")
    z = float(z)
    if not math.isfinite(z):
        raise ValueError(f"z must be finite, got {z}")
    rng = random.Random(f"{seed}/{node}")
    if start is None:
        here = (rng.uniform(x0, x1), rng.uniform(y0, y1), z)
    else:
        here = _point(start)
        if not all(math.isfinite(c) for c in here):
            raise ValueError(f"start must be finite, got {list(here)}")
        if not (x0 <= here[0] <= x1 and y0 <= here[1] <= y1):
            raise ValueError(f"start ({here[0]}, {here[1]}) is outside the area (({x0}, {y0}), ({x1}, {y1}))")
    box = ((x0, y0), (x1, y1))
    info = {"model": "random-waypoint", "seed": seed, "area": [[x0, y0], [x1, y1]],
            "speed": list(speeds), "pause": list(pauses),
            "start": None if start is None else list(here), "z": here[2]}
    return Track([(0.0, here)], info, _waypoints(rng, box, speeds, pauses, here))


# --- trace files --------------------------------------------------------------------------------

NS2_ALLOWED = ("'$node_(i) set X_|Y_|Z_ v', '$ns_ at t \"$node_(i) setdest x y speed\"', "
               "'$ns_ at t \"$node_(i) set X_|Y_|Z_ v\"', '$god_ …', '$ns_ at t \"$god_ …\"', "
               "'# comment', blank")
CSV_ALLOWED = "rows 'time,node,x,y' or 'time,node,x,y,z', an optional header 'time,…' first"

_NS2_SET = re.compile(r"^\$node_\((\d+)\)\s+set\s+([XYZ])_\s+(\S+)$")
_NS2_AT = re.compile(r'^\$ns_\s+at\s+(\S+)\s+"\s*(.*?)\s*"$')
_NS2_SETDEST = re.compile(r"^\$node_\((\d+)\)\s+setdest\s+(\S+)\s+(\S+)\s+(\S+)$")
_NS2_GOD = re.compile(r"^\$god_(\s|$)")
_AXES = {"X": 0, "Y": 1, "Z": 2}


class _Line:
    """One line of a trace file, for error messages."""

    def __init__(self, file: str, number: int, text: str, allowed: str) -> None:
        self.file = file
        self.number = number
        self.text = text
        self.allowed = allowed

    def fail(self, problem: str, allowed: Optional[str] = None) -> ValidationError:
        quoted = self.text if len(self.text) <= 100 else self.text[:97] + "..."
        return ValidationError(self.file, TRACE_FIELD, f"{problem}: '{quoted}'", allowed or self.allowed,
                               self.number)

    def number_of(self, text: str, what: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise self.fail(f"{what} '{text}' is not a number") from None
        if not math.isfinite(value):
            raise self.fail(f"{what} must be a finite number, got '{text}'")
        return value

    def time_of(self, text: str) -> float:
        value = self.number_of(text, "time")
        if value < 0:
            raise self.fail(f"time {text} is negative")
        return value


def _members(nodes: List[str]) -> str:
    if not nodes:
        return "the segment has no members"
    count = "1 member" if len(nodes) == 1 else f"{len(nodes)} members"
    span = "node_(0)" if len(nodes) == 1 else f"node_(0) … node_({len(nodes) - 1})"
    return f"the segment has {count} ({span})"


def _node_index(line: _Line, text: str, nodes: List[str]) -> int:
    index = int(text)
    if index >= len(nodes):
        raise line.fail(f"trace names node index {index}, but {_members(nodes)}")
    return index


def _lines(text: str) -> Iterator[Tuple[int, str]]:
    """(1-based number, stripped text) of every line that is not blank or a comment."""
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped and not stripped.startswith("#"):
            yield number, stripped


def parse_ns2(text: str, file: str, nodes: List[str]) -> Dict[str, Track]:
    """An ns-2 movement file → a track for each node it names (node_(i) is nodes[i])."""
    initial: Dict[int, Dict[int, float]] = {}
    first_line: Dict[int, _Line] = {}
    #: index → its timed events (time, "setdest", (x, y, speed)) or (time, "set", (axis, value)),
    #: in file order
    events: Dict[int, List[Tuple[float, str, Tuple[float, float, float]]]] = {}
    for number, stripped in _lines(text):
        line = _Line(file, number, stripped, NS2_ALLOWED)
        if _NS2_GOD.match(stripped):
            continue
        m = _NS2_SET.match(stripped)
        if m:
            index = _node_index(line, m.group(1), nodes)
            initial.setdefault(index, {})[_AXES[m.group(2)]] = line.number_of(m.group(3), f"{m.group(2)}_")
            first_line.setdefault(index, line)
            continue
        m = _NS2_AT.match(stripped)
        if not m:
            raise line.fail("malformed line")
        t = line.time_of(m.group(1))
        command = m.group(2)
        if _NS2_GOD.match(command):
            continue
        d = _NS2_SETDEST.match(command)
        s = _NS2_SET.match(command)
        if d:
            index = _node_index(line, d.group(1), nodes)
            x = line.number_of(d.group(2), "x")
            y = line.number_of(d.group(3), "y")
            v = line.number_of(d.group(4), "speed")
            if v < 0:
                raise line.fail(f"speed {d.group(4)} is negative")
            event = (t, "setdest", (x, y, v))
        elif s:
            index = _node_index(line, s.group(1), nodes)
            value = line.number_of(s.group(3), f"{s.group(2)}_")
            event = (t, "set", (float(_AXES[s.group(2)]), value, 0.0))
        else:
            raise line.fail("malformed line: an '$ns_ at' command must be a setdest or a set of X_, Y_ or Z_")
        events.setdefault(index, []).append(event)
        first_line.setdefault(index, line)
    tracks: Dict[str, Track] = {}
    for index in sorted(first_line):
        start = initial.get(index, {})
        missing = [f"{axis}_" for axis, i in _AXES.items() if i < 2 and i not in start]
        if missing:
            raise first_line[index].fail(
                f"node_({index}) has no initial position: the trace never sets its {' or '.join(missing)}"
                f" (a '$node_({index}) set {missing[0]} v' line)")
        here = (start[0], start[1], start.get(2, 0.0))
        keys = _ns2_keys(here, events.get(index, []))
        tracks[nodes[index]] = Track(keys, {"model": "trace", "file": file, "format": "ns2"})
    return tracks


def _ns2_keys(here: Point, events: List[Tuple[float, str, Tuple[float, float, float]]]) -> List[Key]:
    """Play one node's events (sorted stably by time) from its initial position into key points."""
    keys: List[Key] = [(0.0, here)]

    def add(t: float, p: Point) -> None:
        if keys[-1] != (t, p):
            keys.append((t, p))

    moving: Optional[Tuple[float, Point, Point, float]] = None   # (from time, from, to, arrival)
    for t, kind, data in sorted(events, key=lambda e: e[0]):
        if moving is not None:
            t0, p0, p1, t1 = moving
            if t >= t1:
                add(t1, p1)
                here = p1
            else:
                here = _lerp(p0, p1, (t - t0) / (t1 - t0))
            moving = None
        add(t, here)
        if kind == "setdest":
            x, y, v = data
            target = (x, y, here[2])
            if v > 0 and target != here:
                moving = (t, here, target, t + _distance(here, target) / v)
        else:
            coords = list(here)
            coords[int(data[0])] = data[1]
            here = (coords[0], coords[1], coords[2])
            add(t, here)
    if moving is not None:
        add(moving[3], moving[2])
    return keys


def parse_csv(text: str, file: str, nodes: List[str]) -> Dict[str, Track]:
    """CSV samples 'time,node,x,y[,z]' → a piecewise-linear track through each node's samples.
    `node` is a name from `nodes` or an index into it."""
    known = {name: i for i, name in enumerate(nodes)}
    samples: Dict[int, List[Tuple[float, Point, _Line]]] = {}
    first = True
    for number, stripped in _lines(text):
        line = _Line(file, number, stripped, CSV_ALLOWED)
        cells = [c.strip() for c in stripped.split(",")]
        if first and cells[0].lower() in ("time", "t"):
            first = False
            continue
        first = False
        if len(cells) not in (4, 5):
            raise line.fail(f"expected 4 or 5 columns (time,node,x,y[,z]), got {len(cells)}")
        t = line.time_of(cells[0])
        index = _csv_node(line, cells[1], known, nodes)
        x = line.number_of(cells[2], "x")
        y = line.number_of(cells[3], "y")
        z = line.number_of(cells[4], "z") if len(cells) == 5 else 0.0
        samples.setdefault(index, []).append((t, (x, y, z), line))
    if not samples:
        raise ValidationError(file, TRACE_FIELD, "the trace has no samples", CSV_ALLOWED)
    tracks: Dict[str, Track] = {}
    for index in sorted(samples):
        keys: List[Key] = []
        previous: Optional[_Line] = None
        for t, p, line in sorted(samples[index], key=lambda s: s[0]):
            if keys and keys[-1][0] == t:
                if keys[-1][1] != p:
                    assert previous is not None
                    raise line.fail(f"node {nodes[index]} has another position at time {t} s "
                                    f"(line {previous.number})")
                continue
            keys.append((t, p))
            previous = line
        tracks[nodes[index]] = Track(keys, {"model": "trace", "file": file, "format": "csv"})
    return tracks


def _csv_node(line: _Line, cell: str, known: Dict[str, int], nodes: List[str]) -> int:
    if cell in known:
        return known[cell]
    if cell.isascii() and cell.isdigit():
        index = int(cell)
        if index < len(nodes):
            return index
        raise line.fail(f"trace names node index {index}, but {_members(nodes)}")
    some = ", ".join(nodes[:5]) + (f", … ({len(nodes)} in all)" if len(nodes) > 5 else "")
    allowed = f"a member of the segment ({some}) or its index" if nodes else "none: the segment has no members"
    raise line.fail(f"unknown node '{cell}'", allowed)


def guess_format(text: str) -> str:
    """'ns2' if a line starts with '$', else 'csv'."""
    for raw in text.splitlines():
        if raw.lstrip().startswith("$"):
            return "ns2"
    return "csv"


#: a trace is read whole; this bounds what a mistaken path (a device, a huge log) can cost
MAX_TRACE_BYTES = 256 << 20


def trace_file_problem(path: str) -> Optional[Tuple[str, str]]:
    """(what is wrong, what is allowed) when `path` cannot be a trace file to read whole, else None."""
    if not os.path.isfile(path):
        problem = "the trace is not a regular file" if os.path.exists(path) else "no such trace file"
        return problem, "a trace file, relative to the topology file"
    if os.path.getsize(path) > MAX_TRACE_BYTES:
        return f"the trace is larger than {MAX_TRACE_BYTES >> 20} MiB", "a trace file of at most 256 MiB"
    return None


def load_trace(path: str, fmt: Optional[str], nodes: List[str], field: str) -> Dict[str, Track]:
    """Read a trace file in format `fmt` ("ns2", "csv", or None: guessed from the content) → a
    track for each node it names. A file that cannot be read is a ValidationError naming `field`."""
    if fmt is not None and fmt not in FORMATS:
        raise ValidationError(path, field, f"unknown trace format '{fmt}'", ", ".join(FORMATS))
    try:
        problem = trace_file_problem(path)
        if problem:
            raise ValidationError(path, field, *problem)
        with open(path, encoding="utf-8") as handle:
            text = handle.read(MAX_TRACE_BYTES + 1)
    except OSError as exc:
        raise ValidationError(path, field, f"cannot read the trace file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValidationError(path, field, f"cannot read the trace file: not UTF-8 text ({exc.reason})") from None
    fmt = fmt or guess_format(text)
    return parse_ns2(text, path, nodes) if fmt == "ns2" else parse_csv(text, path, nodes)
