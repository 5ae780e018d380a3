"""What the radio medium writes into the run directory, tick by tick (docs/RUNDIR.md):

- `radio/positions.csv` → `radio/positions.parquet`: t_ns, t_s, segment, node, x, y, z; one row
  per member per tick.
- `radio/links.csv` → `radio/links.parquet`: t_ns, t_s, segment, src, dst, distance_m, p; one row
  per ordered pair that can hear each other at that tick (p > 0), with the delivery probability
  the medium applies. A tick's rows hold until the segment's next tick.

t_ns is the wall clock (CLOCK_REALTIME, like the events and captures) by which the tick's rules
had taken effect (its nftables transaction had returned), from_ns when that transaction began:
the rules changed at one instant between the two, so a frame in between may have passed under
either tick's rules. t_s is the model time (seconds since the experiment's clock started). Rows are
appended to the CSV files and flushed every tick, so a killed run keeps every tick it applied;
`finish` (or `testbed clean` for a killed run, see rundir.finish_killed_runs) converts them to
Parquet, which pandas and Spark read with their types.
"""

from __future__ import annotations

import io
import os
from typing import Iterable, Optional

import numpy as np

DIRECTORY = "radio"
#: table → its columns in file order, with their Arrow types: the one statement of the contract,
#: which the analysis (spark_analysis.radio) reads too
TABLES = {
    "positions": {"t_ns": "int64", "from_ns": "int64", "t_s": "float64", "segment": "string", "node": "string",
                  "x": "float64", "y": "float64", "z": "float64"},
    "links": {"t_ns": "int64", "from_ns": "int64", "t_s": "float64", "segment": "string", "src": "string",
              "dst": "string", "distance_m": "float64", "p": "float64"},
}


def _schema(name: str):
    import pyarrow as pa

    return pa.schema([(column, pa.type_for_alias(alias)) for column, alias in TABLES[name].items()])


class Recorder:
    """Appends ticks to the run directory's radio tables."""

    def __init__(self, run_dir: str) -> None:
        self.dir = os.path.join(run_dir, DIRECTORY)
        os.makedirs(self.dir, exist_ok=True)
        self._files = {}
        for name, columns in TABLES.items():
            handle = open(os.path.join(self.dir, f"{name}.csv"), "w")
            handle.write(",".join(columns) + "\n")
            self._files[name] = handle

    def tick(self, t_ns: int, from_ns: int, t_s: float, segment: str, nodes: Iterable[str], positions: np.ndarray,
             src: Iterable[str], dst: Iterable[str], distance: np.ndarray, p: np.ndarray) -> None:
        head = f"{t_ns},{from_ns},{t_s:.6f},{segment},"
        self._files["positions"].write("".join(
            f"{head}{node},{x:.3f},{y:.3f},{z:.3f}\n" for node, (x, y, z) in zip(nodes, positions.tolist())))
        self._files["links"].write("".join(
            f"{head}{a},{b},{d:.3f},{q:.6g}\n" for a, b, d, q in zip(src, dst, distance.tolist(), p.tolist())))
        for handle in self._files.values():
            handle.flush()

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._files = {}
        to_parquet(os.path.dirname(self.dir))


def to_parquet(run_dir: str) -> Optional[str]:
    """Convert a run's radio CSV tables to Parquet (and remove the CSV); a half-written last line
    (a killed run) is dropped. Returns a problem, or None."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    problems = []
    for name in TABLES:
        source = os.path.join(run_dir, DIRECTORY, f"{name}.csv")
        if not os.path.exists(source):
            continue
        with open(source, "rb") as handle:
            data = handle.read()
        if data and not data.endswith(b"\n"):
            data = data[:data.rfind(b"\n") + 1]
        try:
            schema = _schema(name)
            table = pacsv.read_csv(io.BytesIO(data),
                                   convert_options=pacsv.ConvertOptions(column_types=schema))
            pq.write_table(table.select(schema.names), os.path.join(run_dir, DIRECTORY, f"{name}.parquet"))
            os.remove(source)
        except Exception as exc:  # keep the CSV: nothing is lost
            problems.append(f"radio/{name}.csv: {exc}")
    return "; ".join(problems) or None
