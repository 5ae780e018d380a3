"""A topology written as a Python dict, a link made lossy while the lab runs, and the loss measured
with ping from inside a node: 0% before, about 30% each way (so about 51% of round trips) during,
0% again after the link is restored.

Run as root from the repository root: python3 examples/lossy_link.py
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import testbed.api as tb  # noqa: E402

PINGS = 200


def round_trip_loss(lab, src: str, dst: str) -> float:
    out = lab.exec(src, f"ping -q -c {PINGS} -i 0.01 -W 1 {lab.address(dst)}", check=False)
    return float(re.search(r"([\d.]+)% packet loss", out).group(1)) / 100


def main() -> int:
    topo = tb.topology({"name": "two", "nodes": {"a": {}, "b": {}}, "links": [["a", "b"]]})
    with tb.lab(topo, name="example-loss") as lab:
        before = round_trip_loss(lab, "a", "b")
        lab.set_link("a", "b", loss=0.3)
        during = round_trip_loss(lab, "a", "b")
        lab.restore_link("a", "b")
        after = round_trip_loss(lab, "a", "b")
    print(f"round-trip loss: before {before:.1%}, with 30% loss each way {during:.1%} "
          f"(expected about {1 - 0.7 * 0.7:.0%}), after {after:.1%}")
    return 0 if before == 0 and after == 0 and 0.35 < during < 0.67 else 1


if __name__ == "__main__":
    sys.exit(main())
