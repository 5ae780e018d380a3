"""The causal cluster-consistency paper's experiments (Gidenstam et al., section 6) at this
machine's scale: the experiment files experiments/causal/fig5.yaml (Figure 5: 25 coordinators,
the load rising to 12.5 new events a gossip round, no recovery, R1 and R4, gossip alone from the
same runs' PrCast order, 21 runs of about a minute), fig4.yaml (Figure 4: groups of 25-125
members with 5, 25 and all members updating, 6 events a round, R1) and churn.yaml (coordinators
joining, leaving and killed from the timeline with k = 1).

    python benchmarks/causal_paper.py [--set fig5|fig4|churn|all] [--seeds N] [--no-run]
    python benchmarks/causal_paper.py --tables     # the Markdown tables of docs/REPRODUCTION.md

Runs `testbed experiment` on each file (resuming what is complete), then writes
benchmarks/results/causal_paper.json: per experiment, per point and measure the mean, the
expected shapes' verdicts, and per run its measures. docs/REPRODUCTION.md sets them beside the
paper's prose (its figures survive as captions only).
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from experiment_sets import main  # noqa: E402

FILES = {"fig5": "experiments/causal/fig5.yaml", "fig4": "experiments/causal/fig4.yaml",
         "churn": "experiments/causal/churn.yaml"}

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "causal_paper.json")

#: per experiment: the columns of its table (measure, heading, format)
COLUMNS = {
    "fig5": [("gossip_lost", "lost, gossip only", "{:.2%}"), ("lost", "lost, two-layer", "{:.2%}"),
             ("forced", "forced", "{:.0f}"), ("latency_ms", "median latency (ms)", "{:.0f}"),
             ("latency_rounds", "(rounds)", "{:.2f}"), ("latency_p95_ms", "p95 latency (ms)", "{:.0f}"),
             ("recovery_requests", "recovery requests", "{:.0f}"), ("recovery_success", "recovered", "{:.0%}")],
    "fig4": [("throughput", "throughput (events / member / s)", "{:.1f}"), ("latency_ms", "median latency (ms)", "{:.0f}"),
             ("latency_rounds", "(rounds)", "{:.2f}"), ("latency_p95_ms", "p95 latency (ms)", "{:.0f}"),
             ("message_bytes", "message size (bytes)", "{:.0f}"), ("lost", "lost", "{:.2%}")],
    "churn": [("shared_tickets", "shared tickets", "{:.0f}"), ("exclusions", "exclusions", "{:.0f}"),
              ("joins", "joins", "{:.0f}"), ("exclusion_rounds", "fault to exclusion, largest (rounds)", "{:.2f}"),
              ("disconnect_ok", "cut-off within bound", "{:.0f}"), ("alive_max", "ALIVEs a round, most", "{:.0f}"),
              ("lost", "lost", "{:.2%}")],
}


def _key(point: str):
    """Points sort by scenario, then by their grid values as numbers."""
    parts = point.split(".", 1)
    values = [float(v.split("=")[1]) for v in parts[1].split(".") if "=" in v] if len(parts) > 1 else []
    return parts[0], values


def tables(path: str = RESULTS) -> str:
    """Each experiment's points as a Markdown table of its measures' means, and its shapes."""
    with open(path) as fh:
        experiments = json.load(fh)["experiments"]
    out = []
    for name, columns in COLUMNS.items():
        if name not in experiments:
            continue
        exp = experiments[name]
        out += [f"#### {name} ({exp['directory']})", "",
                "| point | " + " | ".join(h for _, h, _ in columns) + " |", "|---" * (len(columns) + 1) + "|"]
        for point in sorted(exp["points"], key=_key):
            row = exp["points"][point]
            cells = [fmt.format(row[m]["mean"]) if row.get(m) and row[m]["mean"] is not None else "-"
                     for m, _, fmt in columns]
            out.append(f"| {point} | " + " | ".join(cells) + " |")
        out += [""] + [f"- {s['verdict']}: {s['name']}" for s in exp["shapes"]] + [""]
    return "\n".join(out)


if __name__ == "__main__":
    if sys.argv[1:] == ["--tables"]:
        print(tables())
        sys.exit(0)
    sys.exit(main(__doc__.split("\n\n")[0], FILES, "causal", "causal_paper.json", "fig5"))
