"""What a topology declares about radio: its segments, and each member node's position and
mobility. Pure data and its validation; `testbed.topology` reads the YAML through these, and
the radio medium (testbed.media.radio) realises them.

A segment in a topology file:

    radio:
      air:
        members: [n1, n2, sensor]     # node names, NODE:INTERFACE, or kind names (all their nodes)
        range: 100m                   # required; beyond it nothing arrives, ever
        loss: {model: log-distance, exponent: 3, sigma: 4}   # default: none (all frames in range arrive)
        bitrate: 250kbit              # airtime: each sender serialised at this rate (default: none)
        queue: 50                     # frames waiting for the air per sender, beyond which they drop
        tick: 1s                      # how often positions are applied
        trace: moves.ns2              # ns-2 setdest/BonnMotion/SUMO file or CSV (time,node,x,y[,z])
        channel: kernel               # or wifi: an 802.11 channel in ns-3 (see radio.wifi for its fields)

and per node (or kind, or defaults): `position: [x, y]` or `[x, y, z]` in metres, and
`mobility: static` or `{model: random-waypoint, area: [[x0, y0], [x1, y1]], speed: [1, 5],
pause: [0s, 2s]}`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..model import LinkProps
from ..units import (COORDINATE_ALLOWED, TIME_ALLOWED, parse_coordinate_m, parse_delay_ms, parse_distance_m,
                     parse_time_ms)
from .propagation import LossModel, ModelError

Point = Tuple[float, float, float]

SEGMENT_KEYS = ("members", "channel", "range", "loss", "bitrate", "queue", "delay", "jitter", "tick", "trace",
                "standard", "data_rate", "basic_rate", "propagation")
TRACE_KEYS = ("file", "format", "nodes", "sumo")
TRACE_FORMATS = ("ns2", "csv")
MOBILITY_MODELS = ("static", "random-waypoint")
MOBILITY_ALLOWED = ("static, or {model: random-waypoint, area: [[X0, Y0], [X1, Y1]], speed: [MIN, MAX] (m/s), "
                    "pause: [MIN, MAX] (durations)}")
POSITION_ALLOWED = "[X, Y] or [X, Y, Z] in metres, such as [120, 40]"
#: a tick shorter than this cannot be applied in time on a loaded machine
MIN_TICK_MS = 10.0
MAX_QUEUE = 100_000
DEFAULT_QUEUE = 50
#: the radio interface names a member gets when its entry does not name one: wlan0, wlan1, ...
INTERFACE_PREFIX = "wlan"


@dataclass(frozen=True)
class MobilitySpec:
    model: str = "static"
    area: Tuple[Tuple[float, float], Tuple[float, float]] = ((0.0, 0.0), (0.0, 0.0))
    speed: Tuple[float, float] = (1.0, 1.0)
    pause: Tuple[float, float] = (0.0, 0.0)

    def to_dict(self) -> Any:
        if self.model == "static":
            return "static"
        return {"model": self.model, "area": [list(self.area[0]), list(self.area[1])],
                "speed": list(self.speed), "pause": [f"{p:g}s" for p in self.pause]}


@dataclass
class TraceSpec:
    file: str            # as written in the topology
    path: str            # resolved against the topology file's directory
    format: Optional[str]
    nodes: List[str]     # node_(i) / index i of the trace → nodes[i]
    #: instead of a file: a trace SUMO makes when the lab starts (radio.sumo.Streets' fields; a
    #: seed of None is the run's)
    sumo: Optional[Dict[str, Any]] = None

    def to_dict(self) -> Dict[str, Any]:
        if self.sumo is not None:
            out: Dict[str, Any] = {"sumo": {key: self.sumo[attr] for key, attr in SUMO_KEYS.items()
                                            if self.sumo[attr] is not None}}
        else:
            out = {"file": self.file}
        if self.format:
            out["format"] = self.format
        out["nodes"] = list(self.nodes)
        return out


@dataclass
class RadioSegment:
    name: str
    range_m: float
    loss: LossModel = field(default_factory=LossModel)
    bitrate_kbit: Optional[float] = None
    queue_frames: int = DEFAULT_QUEUE
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    tick_s: float = 1.0
    trace: Optional[TraceSpec] = None
    #: member node → its radio interface, in declaration order
    members: Dict[str, str] = field(default_factory=dict)
    #: what carries the frames (testbed.radio.channels): the kernel range medium or an 802.11 channel
    channel: str = "kernel"
    #: the 802.11 channel's settings (radio.wifi.WifiSpec) when channel is wifi
    wifi: Any = None

    def props(self) -> LinkProps:
        """What a sender's radio egress asks of the machine, in the wired links' terms."""
        return LinkProps(delay_ms=self.delay_ms, jitter_ms=self.jitter_ms,
                         bandwidth_mbit=None if self.bitrate_kbit is None else self.bitrate_kbit / 1000.0)

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"members": [f"{n}:{i}" for n, i in self.members.items()],
                               "range": f"{self.range_m:g}m"}
        if self.channel != "kernel":
            out["channel"] = self.channel
        if self.wifi is not None:
            wifi = self.wifi.to_dict()
            out.update({key: wifi[key] for key in ("standard", "data_rate", "basic_rate")})
            out["propagation"] = wifi["propagation"]
        else:
            out["loss"] = self.loss.to_dict()
        if self.bitrate_kbit is not None:
            out["bitrate"] = f"{self.bitrate_kbit:g}kbit"
        out["queue"] = self.queue_frames
        if self.delay_ms:
            out["delay"] = f"{self.delay_ms:g}ms"
        if self.jitter_ms:
            out["jitter"] = f"{self.jitter_ms:g}ms"
        out["tick"] = f"{self.tick_s * 1000:g}ms"
        if self.trace is not None:
            out["trace"] = self.trace.to_dict()
        return out

    def manifest(self) -> Dict[str, Any]:
        """The emulated properties, in the units the analysis reads."""
        out = {"channel": self.channel, "range_m": self.range_m, "loss": self.loss.to_dict(),
               "bitrate_kbit": self.bitrate_kbit, "queue_frames": self.queue_frames, "delay_ms": self.delay_ms,
               "jitter_ms": self.jitter_ms, "tick_s": self.tick_s, "members": dict(self.members),
               "trace": None if self.trace is None else self.trace.to_dict()}
        if self.wifi is not None:
            out["wifi"] = self.wifi.manifest()
        return out

    def delivery(self, distance: np.ndarray) -> np.ndarray:
        """The probability that a frame sent over each distance arrives, from range and
        propagation alone (on the wifi channel: without interference, at the PHY's threshold)."""
        heard = distance <= self.range_m
        if self.wifi is not None:
            p = self.wifi.probability(distance)
        else:
            p = self.loss.probability(distance)
        return np.where(heard, p, 0.0)


def parse_position(value: Any) -> Point:
    """[x, y] or [x, y, z] → a point (ModelError with the bad index)."""
    if not isinstance(value, (list, tuple)) or len(value) not in (2, 3):
        raise ModelError((), "expected a position", POSITION_ALLOWED)
    coords = []
    for i, item in enumerate(value):
        try:
            coords.append(parse_coordinate_m(item))
        except ValueError as exc:
            raise ModelError((i,), str(exc), COORDINATE_ALLOWED) from None
    if len(coords) == 2:
        coords.append(0.0)
    return (coords[0], coords[1], coords[2])


def _pair(value: Any, key: str, parse, allowed: str) -> Tuple[float, float]:
    items = value if isinstance(value, (list, tuple)) else [value, value]
    if len(items) != 2:
        raise ModelError((key,), "expected one value or [MIN, MAX]", allowed)
    out = []
    for i, item in enumerate(items):
        try:
            out.append(parse(item))
        except ValueError as exc:
            raise ModelError((key,) if not isinstance(value, (list, tuple)) else (key, i), str(exc), allowed) from None
    if out[0] > out[1]:
        raise ModelError((key,), f"the minimum {items[0]} is above the maximum {items[1]}", allowed)
    return (out[0], out[1])


def _speed(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{value!r} is not a speed")
    if not 0 < value <= 1e5:
        raise ValueError(f"{value} is not a speed above 0 and at most 100000 m/s")
    return float(value)


def parse_mobility(value: Any) -> MobilitySpec:
    """A node's `mobility:` → MobilitySpec (ModelError with the bad key)."""
    if value is None or value == "static" or value == {"model": "static"}:
        return MobilitySpec()
    if isinstance(value, str) or not isinstance(value, dict):
        raise ModelError((), f"unknown mobility {value!r}", MOBILITY_ALLOWED)
    model = value.get("model")
    if model not in MOBILITY_MODELS:
        raise ModelError(("model",), f"unknown mobility model {model!r}", ", ".join(MOBILITY_MODELS))
    if model == "static":
        raise ModelError((sorted(set(value) - {"model"})[0],), "static mobility has no parameters", "static")
    keys = ("model", "area", "speed", "pause")
    for key in value:
        if key not in keys:
            raise ModelError((key,), f"unknown field '{key}'", ", ".join(keys))
    area_allowed = "[[X0, Y0], [X1, Y1]] (corners in metres) or [WIDTH, HEIGHT] from [0, 0]"
    area = value.get("area")
    if area is None:
        raise ModelError(("area",), "random-waypoint needs the area it moves in", area_allowed)
    if isinstance(area, list) and len(area) == 2 and not any(isinstance(a, list) for a in area):
        area = [[0, 0], area]
    if not isinstance(area, list) or len(area) != 2 or not all(isinstance(c, list) and len(c) == 2 for c in area):
        raise ModelError(("area",), "expected an area", area_allowed)
    try:
        (x0, y0), (x1, y1) = [[parse_coordinate_m(v) for v in corner] for corner in area]
    except ValueError as exc:
        raise ModelError(("area",), str(exc), area_allowed) from None
    if not (x0 < x1 and y0 < y1):
        raise ModelError(("area",), "the second corner must be above and right of the first (x0 < x1, y0 < y1)",
                         area_allowed)
    if "speed" not in value:
        raise ModelError(("speed",), "random-waypoint needs a speed", "a speed in m/s or [MIN, MAX]")
    speed = _pair(value["speed"], "speed", _speed, "a speed in m/s above 0, or [MIN, MAX]")
    pause = _pair(value.get("pause", 0), "pause", lambda v: parse_time_ms(v) / 1000.0,
                  TIME_ALLOWED + ", or [MIN, MAX]")
    return MobilitySpec(model="random-waypoint", area=((x0, y0), (x1, y1)), speed=speed, pause=pause)


def parse_segment_fields(name: str, fields: Dict[str, Any], topology_file: str) -> RadioSegment:
    """The segment's own fields (not its members) → RadioSegment (ModelError with the bad key)."""
    from ..units import DELAY_ALLOWED, DISTANCE_ALLOWED, RATE_ALLOWED, parse_rate_mbit
    from .propagation import parse_loss

    if "range" not in fields:
        raise ModelError(("range",), "a radio segment needs a range: beyond it nothing arrives", DISTANCE_ALLOWED)
    try:
        range_m = parse_distance_m(fields["range"])
    except ValueError as exc:
        raise ModelError(("range",), str(exc), DISTANCE_ALLOWED) from None
    if range_m <= 0:
        raise ModelError(("range",), f"{fields['range']} is not above 0", DISTANCE_ALLOWED)
    try:
        loss = parse_loss(fields.get("loss"))
    except ModelError as exc:
        raise ModelError(("loss",) + exc.key, exc.message, exc.allowed) from None
    segment = RadioSegment(name=name, range_m=range_m, loss=loss)
    from .channels import DEFAULT, channel_names
    from .wifi import check_fields, parse_wifi

    channel = fields.get("channel", DEFAULT)
    if channel not in channel_names():
        raise ModelError(("channel",), f"unknown channel {channel!r}",
                         "kernel (the kernel range medium, the default) or wifi (an 802.11 channel in ns-3)")
    segment.channel = channel
    check_fields(channel, fields)
    if channel == "wifi":
        segment.wifi = parse_wifi(fields, loss)
    if fields.get("bitrate") is not None:
        try:
            segment.bitrate_kbit = parse_rate_mbit(fields["bitrate"]) * 1000.0
        except ValueError as exc:
            raise ModelError(("bitrate",), str(exc), RATE_ALLOWED) from None
    if "queue" in fields:
        queue = fields["queue"]
        if isinstance(queue, bool) or not isinstance(queue, int) or not 1 <= queue <= MAX_QUEUE:
            raise ModelError(("queue",), f"{queue!r} is not a queue length",
                             f"a whole number of frames from 1 to {MAX_QUEUE}")
        segment.queue_frames = queue
    for key in ("delay", "jitter"):
        if key in fields:
            try:
                setattr(segment, f"{key}_ms", parse_delay_ms(fields[key]))
            except ValueError as exc:
                raise ModelError((key,), str(exc), DELAY_ALLOWED) from None
    if segment.jitter_ms and not segment.delay_ms:
        raise ModelError(("jitter",), "jitter varies a delay and needs one", "set delay above 0 on the segment")
    if "tick" in fields:
        try:
            tick_ms = parse_time_ms(fields["tick"], 3_600_000)
        except ValueError as exc:
            raise ModelError(("tick",), str(exc), "a duration from 10ms to 1h, such as 1s or 200ms") from None
        if tick_ms < MIN_TICK_MS:
            raise ModelError(("tick",), f"{fields['tick']} is shorter than 10ms",
                             "a duration from 10ms to 1h, such as 1s or 200ms")
        segment.tick_s = tick_ms / 1000.0
    if fields.get("trace") is not None:
        segment.trace = _trace(fields["trace"], topology_file)
    return segment


SUMO_ALLOWED = ("{size: METRES, block: METRES, cars: N, walkers: N, duration: SECONDS, seed: N} "
                "(defaults 2000, 250, 100, 100, 900 and the run's seed; see testbed mobility sumo)")
SUMO_KEYS = {"size": "size_m", "block": "block_m", "cars": "cars", "walkers": "walkers", "duration": "duration_s",
             "seed": "seed"}


def _sumo(value: Any) -> Dict[str, Any]:
    """`trace: {sumo: {...}}` → Streets' fields (seed None: the run's)."""
    from ..errors import UsageError
    from .sumo import Streets

    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ModelError(("trace", "sumo"), "expected the street grid's settings", SUMO_ALLOWED)
    fields: Dict[str, Any] = {}
    for key, item in value.items():
        if key not in SUMO_KEYS:
            raise ModelError(("trace", "sumo", key), f"unknown field '{key}'", ", ".join(SUMO_KEYS))
        whole = key in ("cars", "walkers", "seed")
        if isinstance(item, bool) or not isinstance(item, int if whole else (int, float)):
            raise ModelError(("trace", "sumo", key), f"expected {'a whole number' if whole else 'a number'}, "
                             f"got {item!r}", SUMO_ALLOWED)
        fields[SUMO_KEYS[key]] = item
    try:
        Streets(**{**fields, "seed": fields.get("seed", 1)}).check()
    except UsageError as exc:
        text = str(exc).replace("--", "")
        bad = text.split()[0]
        key = next((k for k in SUMO_KEYS if bad == k), None)
        message, _, allowed = text.partition(" (allowed: ")
        raise ModelError(("trace", "sumo") + ((key,) if key else ()), message,
                         allowed.rstrip(")") or SUMO_ALLOWED) from None
    out = {attr: getattr(Streets(), attr) for attr in SUMO_KEYS.values()}
    out.update(fields)
    if "seed" not in fields:
        out["seed"] = None  # the run's
    return out


def _trace(value: Any, topology_file: str) -> TraceSpec:
    allowed = ("a file name, {file: NAME, format: ns2 or csv, nodes: [NODE, ...]}, or {sumo: {...}} "
               "(cars and walkers SUMO moves in a street grid when the lab starts)")
    if isinstance(value, str):
        value = {"file": value}
    if not isinstance(value, dict):
        raise ModelError(("trace",), "expected a trace file", allowed)
    for key in value:
        if key not in TRACE_KEYS:
            raise ModelError(("trace", key), f"unknown field '{key}'", ", ".join(TRACE_KEYS))
    if "sumo" in value:
        if "file" in value or "format" in value:
            raise ModelError(("trace", "sumo"), "a trace is a file or made by SUMO, not both", allowed)
        nodes = value.get("nodes", [])
        if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
            raise ModelError(("trace", "nodes"), "expected a list of node names",
                             "the nodes the trace's indices 0, 1, ... stand for (default: the members in order)")
        return TraceSpec(file="", path="", format=None, nodes=list(nodes), sumo=_sumo(value["sumo"]))
    file = value.get("file")
    if not isinstance(file, str) or not file:
        raise ModelError(("trace", "file"), "expected the trace's file name", allowed)
    fmt = value.get("format")
    if fmt is not None and fmt not in TRACE_FORMATS:
        raise ModelError(("trace", "format"), f"unknown trace format {fmt!r}", ", ".join(TRACE_FORMATS))
    nodes = value.get("nodes", [])
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
        raise ModelError(("trace", "nodes"), "expected a list of node names",
                         "the nodes the trace's indices 0, 1, ... stand for (default: the members in order)")
    base = os.path.dirname(os.path.abspath(topology_file)) if not topology_file.startswith("<") else os.getcwd()
    return TraceSpec(file=file, path=os.path.join(base, file), format=fmt, nodes=list(nodes))
