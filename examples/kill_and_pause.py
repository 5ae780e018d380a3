"""Probe agents on the line, then faults from Python: h2 paused for a second (it sends nothing
meanwhile) and h3 killed (it sends nothing after). The counts come from the agents' own event
logs in each node's directory.

Run as root from the repository root: python3 examples/kill_and_pause.py
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import testbed.api as tb  # noqa: E402


def sends(lab, node: str):
    """Times (ns) of the node's send events so far."""
    path = os.path.join(lab.node_dir(node), "events.jsonl")
    with open(path) as handle:
        return [e["t"] for e in map(json.loads, handle) if e["event"] == "send"]


def main() -> int:
    topo = tb.load_topology("topologies/line3.yaml")
    for node in topo.nodes.values():  # every node runs the probe agent: 50 broadcasts a second
        node.role, node.params = "probe", {"rate": 50, "to": "broadcast"}
    with tb.lab(topo, name="example-faults") as lab:
        time.sleep(2)
        lab.pause("h2")
        paused = time.time_ns()
        time.sleep(1)
        resumed = time.time_ns()
        lab.resume("h2")
        lab.kill("h3")
        killed = time.time_ns()
        time.sleep(1)
        h2, h3 = sends(lab, "h2"), sends(lab, "h3")
    while_paused = [t for t in h2 if paused + 50_000_000 < t < resumed]
    after_kill = [t for t in h3 if t > killed]
    print(f"h2 sent {len(h2)} probes, {len(while_paused)} while paused; h3 sent {len(h3)}, "
          f"{len(after_kill)} after its kill")
    return 0 if h2 and h3 and not while_paused and not after_kill else 1


if __name__ == "__main__":
    sys.exit(main())
