"""`flat: 0.1, over: PARAM`: along the grid parameter PARAM, the measure's mean stays within
±10 % (the given fraction) of the series' own mean, for every combination of the other free
parameters (and scenario). "Throughput remains constant" read with a tolerance the file states."""

from __future__ import annotations

from typing import Any, Dict

from .common import Along, combine, grid_values

KEY = "flat"
FIELDS = ("over",)
SCHEMA = {KEY: {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10,
               "description": "the tolerance, a fraction of the mean"},
          "over": {"type": "string", "description": "a grid parameter"}}


class Flat(Along):
    def __init__(self, measure: str, tolerance: float, over: str, values, where: Dict[str, Any]) -> None:
        super().__init__(measure, over, values, where)
        self.tolerance = tolerance

    def describe(self) -> str:
        return f"{self.measure} flat within ±{self.tolerance:.0%} over {self.over}"

    def judge(self, data) -> Dict[str, Any]:
        out = []
        for entry, values in self.series(data):
            if values is not None:
                mean = sum(values) / len(values)
                if max(values) == min(values):
                    spread = 0.0
                else:
                    spread = max(abs(m - mean) for m in values) / abs(mean) if mean else float("inf")
                entry.update(verdict="valid" if spread <= self.tolerance else "invalid", spread=spread)
                entry["detail"] += f"; farthest {spread:.1%} from the mean"
            out.append(entry)
        return {"verdict": combine(out), "groups": out}


def parse(r, entry: Dict[str, Any], path, exp) -> Flat:
    tolerance = entry[KEY]
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 < tolerance < 10:
        raise r.fail(path + (KEY,), f"{tolerance!r} is not a tolerance", "a fraction of the mean above 0, such as 0.1")
    over, values = grid_values(r, entry, path, exp)
    return Flat(entry["measure"], float(tolerance), over, values, entry.get("where") or {})
