"""The files a remote run needs: the scenario and every file it references.

A scenario references its topology (`topology: PATH`, relative to the scenario file, or
absolute; an inline topology is in the scenario), and a radio segment may reference a mobility
trace (relative to the file that holds the topology, or absolute): Scenario.files lists them.
Files named inside commands (`exec` actions, node `command`s) are the remote machine's own and
are not uploaded, and so is a trace given by an absolute path (a path on that machine).

Relative references are kept by uploading the files with their layout relative to the
directory that holds them all (scenarios/x.yaml and topologies/t.yaml stay siblings, so
`../topologies/t.yaml` still resolves there). An absolute reference cannot mean the same path
on the other machine: that file goes to `absolute/` and the remote run gets
`--set FIELD=<its remote path>`.
"""

from __future__ import annotations

import json
import os
import posixpath
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from ..scenario import Scenario


@dataclass
class Inputs:
    #: (local absolute path, path relative to the remote input directory, POSIX separators)
    files: List[Tuple[str, str]]
    #: the scenario file, relative to the remote input directory
    scenario: str
    #: scenario field → remote path relative to the input directory, for absolute references
    relocated: Dict[str, str] = field(default_factory=dict)

    def overrides(self, input_dir: str) -> List[str]:
        """--set arguments that point relocated references at their uploaded copies."""
        return [f"{name}={json.dumps(posixpath.join(input_dir, rel))}" for name, rel in sorted(self.relocated.items())]

    @property
    def total_bytes(self) -> int:
        return sum(os.path.getsize(local) for local, _ in self.files)


def scenario_inputs(scenario_path: str, scenario: Scenario) -> Inputs:
    scenario_file = os.path.abspath(scenario_path)
    relative: List[str] = [scenario_file]
    absolute: Dict[str, str] = {}
    reference = scenario.raw.get("topology")
    if isinstance(reference, str):
        if os.path.isabs(reference):
            absolute["topology"] = scenario.topology_source
        else:
            relative.append(scenario.topology_source)  # normalised absolute path, as the loader resolved it
    traces = [os.path.normpath(os.path.abspath(seg.trace.path)) for _, seg in sorted(scenario.topology.radio.items())
              if getattr(seg, "trace", None) is not None and seg.trace.sumo is None  # SUMO's: made there
              and not os.path.isabs(seg.trace.file)]
    if "topology" not in absolute:
        relative += [t for t in traces if t not in relative]
    root = os.path.commonpath([os.path.dirname(f) for f in relative])
    files = [(f, _posix(os.path.relpath(f, root))) for f in relative]
    relocated = {}
    for name, local in absolute.items():
        rel = f"absolute/{name}-{os.path.basename(local)}"
        files.append((local, rel))
        relocated[name] = rel
    if "topology" in absolute:  # a relocated topology's traces go where its relative references lead
        here = os.path.dirname(absolute["topology"])
        for trace in traces:
            rel = posixpath.normpath(posixpath.join("absolute", _posix(os.path.relpath(trace, here))))
            if rel.startswith("absolute/"):
                files.append((trace, rel))
    return Inputs(files=files, scenario=files[0][1], relocated=relocated)


def _posix(path: str) -> str:
    return path.replace(os.sep, "/")
