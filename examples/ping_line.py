"""Build the three-host line of topologies/line3.yaml, ping every pair from inside the nodes,
print the addresses and what answered, and tear it down: the smallest use of the Python API.

Run as root from the repository root: python3 examples/ping_line.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import testbed.api as tb  # noqa: E402


def main() -> int:
    topo = tb.load_topology("topologies/line3.yaml")
    with tb.lab(topo, name="example-ping") as lab:
        for node in lab.nodes:
            print(f"{node}: {lab.address(node)}")
        answered = lab.ping_all()
    for (src, dst), ok in sorted(answered.items()):
        print(f"{src} -> {dst}: {'ok' if ok else 'NO REPLY'}")
    return 0 if all(answered.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
