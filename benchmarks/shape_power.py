"""How often the expected shapes' verdicts come out valid, not shown or invalid on data of known
shape: the power of each test (a true shape shown) and its errors (a false one judged valid), by
the seeds' noise and their number. The data are generated (a curve plus Gaussian noise of a given
fraction of its mean on every seed), and judged by the same code `testbed experiment` uses.

    python benchmarks/shape_power.py [--repeat 40]

Writes benchmarks/results/shape_power.json and prints one line per (test, truth, noise, seeds):
the shares of valid / not shown / invalid. docs/EXPERIMENTS.md quotes it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable, Dict, List

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from testbed.experiment.model import Experiment, Measure, Param, Point, ScenarioEntry  # noqa: E402
from testbed.experiment.results import Data  # noqa: E402
from testbed.experiment.shapes.fit import Fit  # noqa: E402
from testbed.experiment.shapes.order import Order  # noqa: E402
from testbed.experiment.shapes.trend import Trend  # noqa: E402

XS = [25.0, 50.0, 75.0, 100.0, 125.0]
CURVES: Dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "a line": lambda x: 10 + 0.2 * x,
    "a log": lambda x: 10 + 5 * np.log(x),
    "x²": lambda x: 10 + (x / 25) ** 2,
    "√x": lambda x: 10 + 5 * np.sqrt(x),
    "2^x": lambda x: 10 + 2 ** (x / 25),
    "a 0.3% rise": lambda x: 100 * (1 + 0.003 * (x - 25) / 100),
    "flat": lambda x: 100 + 0 * x,
}
NOISES = [0.005, 0.02, 0.05, 0.1]
SEEDS = [3, 5, 10]


def _experiment() -> Experiment:
    scen = ScenarioEntry("s", "/dev/null")
    param = Param("N", "workload.defaults.params.n", tuple(XS))
    exp = Experiment(name="power", source="<generated>", description="", scenarios=[scen], grid=[param], seeds=[1],
                     sets=(), measures=[Measure("m", ("m",), "m")], references=[], shapes=[], hosts=[])
    exp.points = [Point(f"s.N={x:g}", scen, (("N", x),), ()) for x in XS]
    return exp


def _data(exp: Experiment, means: np.ndarray, noise: float, seeds: int, rng) -> Data:
    values = {p.id: list(m + noise * abs(m) * rng.standard_normal(seeds)) for p, m in zip(exp.points, means)}
    return Data.of(exp, "m", values)


def run(repeat: int) -> List[Dict]:
    exp = _experiment()
    x = np.asarray(XS)
    shapes = {
        "fit: linear": Fit("m", "linear", "N", XS, {}, XS),
        "fit: log": Fit("m", "log", "N", XS, {}, XS),
        "trend: increasing": Trend("m", "increasing", "N", XS, {}, XS),
        "order: first < last": Order("m", [{"N": XS[0]}, {"N": XS[-1]}], {}),
    }
    rng = np.random.default_rng(2026)
    out = []
    for test, shape in shapes.items():
        for truth, curve in CURVES.items():
            means = curve(x)
            for noise in NOISES:
                for seeds in SEEDS:
                    counts = {"valid": 0, "not shown": 0, "invalid": 0, "unknown": 0}
                    for _ in range(repeat):
                        counts[shape.judge(_data(exp, means, noise, seeds, rng))["verdict"]] += 1
                    row = {"test": test, "truth": truth, "noise": noise, "seeds": seeds, "repeat": repeat,
                           **{k: v / repeat for k, v in counts.items() if k != "unknown"}}
                    out.append(row)
                    print(f"{test:<20} {truth:<12} noise {noise:>5.1%} seeds {seeds:>2}: valid {row['valid']:>4.0%}  "
                          f"not shown {row['not shown']:>4.0%}  invalid {row['invalid']:>4.0%}", flush=True)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=40, help="data sets per cell (default 40)")
    args = parser.parse_args(argv)
    rows = run(args.repeat)
    path = os.path.join(HERE, "results", "shape_power.json")
    with open(path, "w") as fh:
        json.dump({"xs": XS, "noises": NOISES, "seeds": SEEDS, "rows": rows}, fh, indent=1)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
