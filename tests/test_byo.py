"""A node whose image is not the testbed's agent takes part in a run, and the property checks judge
its deliveries: examples/byo (a UDP flood written only from docs/EVENTS.md) on three nodes, one
of them behind a lossy link, analysed; the checks' findings are compared with what its logs say."""

from __future__ import annotations

import itertools
import json
import os

import pytest

from testbed.run import Run
from testbed.scenario import load_scenario

from .conftest import ROOT

pytestmark = [pytest.mark.network, pytest.mark.spark]
IMAGE = "example/flood:latest"


@pytest.fixture(scope="module")
def byo_image(machine):
    from testbed.images import build_directory

    build_directory(os.path.join(ROOT, "examples", "byo"), IMAGE, lambda message: None)
    return IMAGE


def test_the_checks_judge_a_program_that_is_not_the_testbeds_agent(no_leftovers, byo_image, spark, tmp_path):
    from spark_analysis.job import analyze

    scenario = load_scenario(os.path.join(ROOT, "scenarios", "byo-flood.yaml"))
    manifest = Run(scenario, out_dir=str(tmp_path / "run"), progress=False).execute()
    assert manifest["status"] == "completed", manifest.get("error")
    run_dir = tmp_path / "run"
    events = {n: [json.loads(line) for line in open(run_dir / "logs" / f"{n}.jsonl")] for n in "abc"}
    sent = {n: [e["seq"] for e in events[n] if e["event"] == "send"] for n in "abc"}
    assert all(seqs == list(range(1, 21)) for seqs in sent.values()), "each node sent its 20 messages"
    delivered = {n: {(e["origin"], e["seq"]) for e in events[n] if e["event"] == "deliver"} for n in "abc"}
    lost = {(f"{origin}:{seq}:FLOOD", node) for origin, node in itertools.permutations("abc", 2)
            for seq in sent[origin] if (origin, seq) not in delivered[node]}
    assert lost, "30% loss on c's link loses some of the flood"
    assert all(node == "c" or origin.startswith("c") for origin, node in lost), "only c's link is lossy"

    (results,) = analyze([str(run_dir)], spark=spark, progress=False).values()
    checks = {c["check"]: c for c in results["checks"]}
    assert results["application"]["all"]["sent"] == 60
    assert results["application"]["all"]["delivered"] == sum(len(d) for d in delivered.values())
    assert checks["at-most-once"]["verdict"] == "valid" and checks["no-phantom"]["verdict"] == "valid"
    assert checks["at-least-once"]["verdict"] == "invalid"
    assert checks["at-least-once"]["anomalies"]["lost"] == len(lost)
    named = {(c["msg"], c["node"]) for c in checks["at-least-once"]["counterexamples"]["lost"]}
    assert named and named <= lost, "each counterexample is a message the node's log lacks"
    assert results["input"]["undeclared_log_fields"] == []
    assert results["errors"]["count"] == 0
