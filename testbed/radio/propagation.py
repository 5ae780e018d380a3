"""Radio loss models: the probability that a frame sent over a distance arrives.

Range is separate and absolute: beyond the segment's range nothing arrives, whatever the model
says. Inside range each frame is delivered with the model's probability, independently of every
other frame (a fresh shadowing draw per frame, as OMNeT++'s LogNormalShadowing and ns-3's
RandomPropagationLossModel draw per transmission).

- `none`: every frame inside range arrives.
- `log-distance` with log-normal shadowing: the path loss at distance d is
  PL(d) = PL(d0) + 10·n·log10(d/d0) + X, X ~ N(0, σ²) dB; a frame arrives when the received
  power P_tx − PL(d) is at least the receiver's sensitivity, so
  p(d) = Φ((P_tx − sensitivity − PL(d0) − 10·n·log10(d/d0)) / σ), a step at the distance where
  the margin is 0 when σ = 0. Below d0 the loss is PL(d0).
- `table`: distance → probability points, linearly interpolated, constant before the first point
  and after the last (up to the range).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Tuple

import numpy as np

MODELS = ("none", "log-distance", "table")
MODELS_ALLOWED = ("none; {model: log-distance, exponent, reference_loss, reference_distance, sigma, tx_power, "
                  "sensitivity}; or {model: table, table: [[DISTANCE, PROBABILITY], ...]}")

#: log-distance field → (attribute, default, description of what is allowed)
LOG_DISTANCE_FIELDS: Dict[str, Tuple[str, float, str]] = {
    "exponent": ("exponent", 3.0, "the path-loss exponent, a number from 1 to 8 (2 in free space)"),
    "reference_loss": ("reference_loss_db", 40.0, "the path loss in dB at the reference distance, 0 to 200"),
    "reference_distance": ("reference_distance_m", 1.0, "the reference distance in metres, above 0"),
    "sigma": ("sigma_db", 0.0, "the shadowing's standard deviation in dB, 0 to 50 (0: no shadowing)"),
    "tx_power": ("tx_power_dbm", 14.0, "the transmit power in dBm, -100 to 100"),
    "sensitivity": ("sensitivity_dbm", -90.0, "the receiver sensitivity in dBm, -200 to 0"),
}
#: each log-distance field's allowed range
BOUNDS = {"exponent": (1.0, 8.0), "reference_loss": (0.0, 200.0), "reference_distance": (1e-6, 1e6),
          "sigma": (0.0, 50.0), "tx_power": (-100.0, 100.0), "sensitivity": (-200.0, 0.0)}


class ModelError(ValueError):
    """A bad loss model; `key` is the path below the `loss` field that is wrong."""

    def __init__(self, key: Tuple[Any, ...], message: str, allowed: str) -> None:
        super().__init__(message)
        self.key, self.message, self.allowed = key, message, allowed


@dataclass(frozen=True)
class LossModel:
    model: str = "none"
    exponent: float = 3.0
    reference_loss_db: float = 40.0
    reference_distance_m: float = 1.0
    sigma_db: float = 0.0
    tx_power_dbm: float = 14.0
    sensitivity_dbm: float = -90.0
    table: Tuple[Tuple[float, float], ...] = ()

    def probability(self, distance: np.ndarray) -> np.ndarray:
        """Delivery probability at each distance (metres), ignoring the range."""
        d = np.asarray(distance, dtype=np.float64)
        if self.model == "none":
            return np.ones_like(d)
        if self.model == "table":
            xs = np.array([x for x, _ in self.table])
            ps = np.array([p for _, p in self.table])
            return np.interp(d, xs, ps)
        ratio = np.maximum(d, self.reference_distance_m) / self.reference_distance_m
        margin = self.tx_power_dbm - self.sensitivity_dbm - self.reference_loss_db - 10.0 * self.exponent * np.log10(ratio)
        if self.sigma_db == 0:
            return (margin >= 0).astype(np.float64)
        from scipy.special import ndtr

        return ndtr(margin / self.sigma_db)

    def to_dict(self) -> Dict[str, Any]:
        if self.model == "none":
            return {"model": "none"}
        if self.model == "table":
            return {"model": "table", "table": [[d, p] for d, p in self.table]}
        out: Dict[str, Any] = {"model": "log-distance"}
        for key, (attr, _, _) in LOG_DISTANCE_FIELDS.items():
            out[key] = getattr(self, attr)
        return out


def parse_loss(value: Any) -> LossModel:
    """A `loss:` field of a radio segment → LossModel (ModelError naming the bad key)."""
    from ..units import parse_distance_m, parse_fraction

    if value is None or value == "none":
        return LossModel()
    if isinstance(value, str):
        raise ModelError((), f"a loss model given by name needs its parameters: {value!r}", MODELS_ALLOWED)
    if not isinstance(value, dict):
        raise ModelError((), "expected a loss model", MODELS_ALLOWED)
    model = value.get("model")
    if model not in MODELS:
        raise ModelError(("model",), f"unknown loss model {model!r}", ", ".join(MODELS))
    if model == "none":
        extra = sorted(set(value) - {"model"})
        if extra:
            raise ModelError((extra[0],), f"the none model has no field '{extra[0]}'", "model: none")
        return LossModel()
    if model == "table":
        extra = sorted(set(value) - {"model", "table"})
        if extra:
            raise ModelError((extra[0],), f"unknown field '{extra[0]}'", "model, table")
        raw = value.get("table")
        if isinstance(raw, dict):
            raw = [[k, v] for k, v in raw.items()]
        allowed = "a list of [DISTANCE, PROBABILITY] pairs with increasing distances, such as [[0, 1.0], [50, 0.8]]"
        if not isinstance(raw, list) or not raw:
            raise ModelError(("table",), "expected a non-empty table of distance → probability", allowed)
        points = []
        for i, item in enumerate(raw):
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise ModelError(("table", i), "expected a [DISTANCE, PROBABILITY] pair", allowed)
            try:
                d = parse_distance_m(item[0])
            except ValueError as exc:
                raise ModelError(("table", i, 0), str(exc), allowed) from None
            try:
                p = parse_fraction(item[1])
            except ValueError as exc:
                raise ModelError(("table", i, 1), str(exc), allowed) from None
            if points and d <= points[-1][0]:
                raise ModelError(("table", i, 0), f"distance {item[0]} does not increase", allowed)
            points.append((d, p))
        return LossModel(model="table", table=tuple(points))
    fields: Dict[str, float] = {}
    for key, item in value.items():
        if key == "model":
            continue
        if key not in LOG_DISTANCE_FIELDS:
            raise ModelError((key,), f"unknown field '{key}'", "model, " + ", ".join(LOG_DISTANCE_FIELDS))
        attr, _, allowed = LOG_DISTANCE_FIELDS[key]
        if key == "reference_distance":
            try:
                number = parse_distance_m(item)
            except ValueError as exc:
                raise ModelError((key,), str(exc), allowed) from None
        elif isinstance(item, (int, float)) and not isinstance(item, bool) and math.isfinite(item):
            number = float(item)
        else:
            raise ModelError((key,), f"expected a number, got {item!r}", allowed)
        low, high = BOUNDS[key]
        if not low <= number <= high:
            raise ModelError((key,), f"{item} is out of range", allowed)
        fields[attr] = number
    return LossModel(model="log-distance", **fields)
