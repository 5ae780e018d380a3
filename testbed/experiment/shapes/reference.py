"""`near_reference: FACTOR`: at every point with a reference value for the measure, the mean is
within a factor FACTOR of it (for a reference range [LOW, HIGH]: within [LOW / FACTOR,
HIGH × FACTOR]). Differences are reported either way; this says which are outside the factor."""

from __future__ import annotations

import math
from typing import Any, Dict

from ..model import matches
from .common import combine

KEY = "near_reference"
FIELDS = ()
SCHEMA = {KEY: {"type": "number", "minimum": 1, "description": "the largest factor between ours and the reference"}}


class NearReference:
    def __init__(self, measure: str, factor: float, where: Dict[str, Any]) -> None:
        self.measure, self.factor, self.where = measure, factor, where

    def describe(self) -> str:
        return f"{self.measure} within a factor {self.factor:g} of the reference"

    def judge(self, data) -> Dict[str, Any]:
        out = []
        for ref in data.exp.references:
            if ref.measure != self.measure:
                continue
            for p in data.exp.select(ref.selector):
                if not matches(p, self.where):
                    continue
                m = data.mean(p.id, self.measure)
                target = f"{ref.low:g}" if ref.low == ref.high else f"{ref.low:g}–{ref.high:g}"
                if m is None:
                    out.append({"group": p.id, "verdict": "unknown", "detail": f"reference {target}, no value"})
                    continue
                ok = ref.low / self.factor <= m <= ref.high * self.factor
                factor = max(1.0, m / ref.high, ref.low / m) if m > 0 and ref.low > 0 else math.inf
                out.append({"group": p.id, "verdict": "valid" if ok else "invalid", "factor": factor,
                            "detail": f"ours {data.fmt(m)}, reference {target} (factor {factor:.2g})"})
        return {"verdict": combine(out), "groups": out}


def parse(r, entry: Dict[str, Any], path, exp) -> NearReference:
    factor = entry[KEY]
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor < 1:
        raise r.fail(path + (KEY,), f"{factor!r} is not allowed", "a factor, a number at least 1 such as 1.5")
    if not any(ref.measure == entry["measure"] for ref in exp.references):
        raise r.fail(path + ("measure",), f"no reference value for {entry['measure']}",
                     "references.values entries for this measure")
    return NearReference(entry["measure"], float(factor), entry.get("where") or {})
