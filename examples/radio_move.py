"""A radio segment from Python: three nodes in a line 80 m apart with a 100 m range, so a cannot
reach c; c is moved next to a, and a reaches it at once; the node reads its new position from
inside its container, as an agent would ($TESTBED_DIR/position.json).

Run as root from the repository root: python3 examples/radio_move.py
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import testbed.api as tb  # noqa: E402


def reaches(lab, src: str, dst: str) -> bool:
    """Whether any of three pings gets an answer (the first may wait for ARP)."""
    out = lab.exec(src, f"ping -c3 -i0.2 -W1 {lab.address(dst)}", check=False)
    return " 0 received" not in out and "received" in out


def main() -> int:
    topo = tb.topology({
        "name": "radio-three",
        "nodes": {"a": {"position": [0, 0]}, "b": {"position": [80, 0]}, "c": {"position": [160, 0]}},
        "radio": {"air": {"members": ["a", "b", "c"], "range": "100m"}},
    })
    with tb.lab(topo, name="example-radio") as lab:
        before = reaches(lab, "a", "c"), reaches(lab, "a", "b")
        lab.move("c", [30, 40])  # 50 m from a
        after = reaches(lab, "a", "c")
        code, text = lab.run_in("c", "cat $TESTBED_DIR/position.json")
        seen = json.loads(text) if code == 0 else {}
        where = lab.position("c")
    print(f"a reaches c before the move: {before[0]}, a reaches b: {before[1]}; after: {after}; "
          f"c sees itself at ({seen.get('x')}, {seen.get('y')}), the medium at ({where[0]:g}, {where[1]:g})")
    return 0 if before == (False, True) and after and (seen.get("x"), seen.get("y")) == (30.0, 40.0) else 1


if __name__ == "__main__":
    sys.exit(main())
