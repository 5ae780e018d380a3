"""The causal cluster paper's generated blocks of docs/REPRODUCTION.md (causal/...), from
benchmarks/results/causal_paper.json. Registered in benchmarks/reproduction.py."""

from __future__ import annotations

from typing import Callable, Dict, List

from repro_common import (load, Column, table, seeds_line, majority_seeds, verdicts_of, ours_column, measures_of,
                          points_table, run_column)


CAUSAL_COLUMNS = {
    "fig5": [("gossip_lost", "lost, gossip only", "pct"), ("lost", "lost, two-layer", "pct"),
             ("forced", "forced", "num"), ("latency_ms", "median latency (ms)", "num"),
             ("latency_rounds", "(rounds)", "num"), ("latency_p95_ms", "p95 latency (ms)", "num"),
             ("gossip_latency_ms", "gossip only: median latency (ms)", "num"),
             ("recovery_requests", "recovery requests", "num"), ("recovery_success", "recovered", "pct"),
             ("gossip_delivery", "gossip messages received", "pct"), ("created", "events created", "num"),
             ("disconnections", "coordinators disconnected", "num")],
    "fig4": [("throughput", "throughput (events / member / s)", "num"), ("latency_ms", "median latency (ms)", "num"),
             ("latency_rounds", "(rounds)", "num"), ("latency_hops", "(mean hops)", "num"),
             ("latency_p95_ms", "p95 latency (ms)", "num"), ("message_bytes", "message size (bytes)", "num"),
             ("record_bytes", "bytes per event record", "num"), ("lost", "lost", "pct"),
             ("gossip_delivery", "gossip messages received", "pct")],
}


def causal_table(name: str) -> Callable[[], str]:
    return points_table("causal", name, CAUSAL_COLUMNS[name])


def causal_churn() -> str:
    exp = load("causal")["churn"]
    columns = [("shared_tickets", "shared tickets (Theorem 4.2)", "num"),
               ("repeated_ids", "event names given twice", "num"), ("exclusions", "exclusions", "num"),
               ("leaves", "leaves (Algorithm 1)", "num"), ("joins", "joins", "num"),
               ("exclusion_rounds", "fault to exclusion, largest (rounds)", "num"),
               ("disconnect_paper", "cut-off within Corollary 4.1's i rounds", "num"),
               ("disconnect_ok", "within i + 1 rounds and (2i − 1)δ", "num"),
               ("alive_max", "most ALIVEs a round (2k+1 = 3)", "num"), ("lost", "lost", "pct")]
    columns = [c for c in columns if c[0] in measures_of(exp)]
    runs = sorted(exp["runs"], key=lambda r: r["seed"])
    n = majority_seeds(exp, [m for m, _, _ in columns])
    per_run: List[Column] = [(h, run_column(m, style)) for m, h, style in columns]
    means: List[Column] = [(h, ours_column(exp["points"], m, style, n)) for m, h, style in columns]
    return (table(runs, per_run, "seed", lambda r: str(r["seed"])) + "\n\n" +
            seeds_line(exp, [m for m, _, _ in columns]) + "\n\n" + table(list(exp["points"]), means, "all seeds"))


#: this paper's blocks, by name (the name after `generated:` in the document)
BLOCKS: Dict[str, Callable[[], str]] = {
    "causal/fig5": causal_table("fig5"),
    "causal/fig5/verdicts": verdicts_of("causal", "fig5"),
    "causal/fig4": causal_table("fig4"),
    "causal/fig4/verdicts": verdicts_of("causal", "fig4"),
    "causal/churn": causal_churn,
    "causal/churn/verdicts": verdicts_of("causal", "churn"),
}
