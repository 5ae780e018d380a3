"""The written contracts, held to the code: the event log (agents/events.py, docs/EVENTS.md), the
run directory's manifest (testbed/rundir.py, docs/RUNDIR.md) and the input files' schemas. Pure:
no root, Docker or Java."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import jsonschema
import pytest
import yaml

from agents import events
from agents.roles import role_module, role_names
from agents.wire import Header, MessageType, encode
from spark_analysis.logreader import CORRUPT, FIELDS, read_log
from testbed.cli import main
from testbed.schema import SCHEMAS

from .conftest import ROOT
from .synthetic import make_run

JSON_TYPES = {"integer", "string", "boolean", "array", "object", "null", "number"}


def validator(kind: str):
    schema = SCHEMAS[kind]()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_testbed_schema_prints_a_valid_json_schema(kind, capsys):
    assert main(["schema", kind]) == 0
    jsonschema.Draft202012Validator.check_schema(json.loads(capsys.readouterr().out))


def test_the_analysis_reads_exactly_the_declared_fields():
    assert FIELDS == events.columns() + [(CORRUPT, "string")]
    names = [name for name, _ in FIELDS]
    assert len(names) == len(set(names))


def test_every_role_declares_its_fields_well():
    for role in role_names():
        declared = getattr(__import__(role_module(role), fromlist=["x"]), "EVENT_FIELDS", {})
        for kind, fields in declared.items():
            assert kind in events.EVENTS, f"{role}: unknown event kind {kind}"
            for name, (types, meaning) in fields.items():
                assert set([types] if isinstance(types, str) else types) <= JSON_TYPES, (role, name)
                assert meaning, (role, name)
    assert "wanted_ns" in dict(events.columns()) and "request_origin" in dict(events.columns())


def test_a_field_nobody_declares_is_reported_not_read():
    data = (b'{"t":1,"node":"a","event":"deliver","type":"X","origin":"b","seq":1,"mood":"happy"}\n'
            b'{"t":2,"node":"a","event":"state","state":"fine","colour_of_sky":[1,2]}\n')
    table, unreadable, undeclared = read_log(data)
    assert unreadable == 0 and undeclared == ["colour_of_sky", "mood"]
    assert "mood" not in table.column_names and table.column("seq").to_pylist() == [1, None]


def test_synthetic_runs_keep_both_contracts(tmp_path):
    make_run(str(tmp_path), packets=3000, seed=1)
    manifest = json.load(open(tmp_path / "manifest.json"))
    assert list(validator("manifest").iter_errors(manifest)) == []
    lines = validator("events")
    for name in os.listdir(tmp_path / "logs"):
        for line in open(tmp_path / "logs" / name):
            assert list(lines.iter_errors(json.loads(line))) == [], line


def test_a_line_of_the_wrong_type_breaks_the_event_contract():
    errors = list(validator("events").iter_errors({"t": "soon", "node": "a", "event": "shout"}))
    assert {e.path[0] for e in errors} == {"t", "event"}


def test_shipped_scenarios_and_topologies_keep_their_schemas():
    scenarios, topologies = validator("scenario"), validator("topology")
    for folder, check in (("scenarios", scenarios), ("topologies", topologies), ("experiments", validator("experiment"))):
        for dirpath, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in names:
                if name.endswith(".yaml"):
                    doc = yaml.safe_load(open(os.path.join(dirpath, name)))
                    assert [e.message for e in check.iter_errors(doc)] == [], name
    bad = {"topology": "x.yaml", "timeline": [{"at": "1s", "action": "kill", "node": "h1", "loss": 0.1}]}
    assert list(scenarios.iter_errors(bad)), "a field of another action breaks the scenario schema"


def test_a_manifest_of_a_newer_format_is_refused_before_spark_starts(tmp_path, capsys):
    run = tmp_path / "run"
    make_run(str(run), packets=2000, seed=2)
    manifest = json.load(open(run / "manifest.json"))
    manifest["manifest_version"] = 99
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert main(["analyze", str(run)]) == 2
    err = capsys.readouterr().err
    assert "manifest_version 99" in err and "newer testbed" in err
    assert not (run / "report").exists() and not (run / "report.partial").exists()


def test_a_role_that_raises_is_logged_and_the_agent_goes_on(tmp_path):
    """The agent runtime with a role that raises in its loop and in its handler (tests/failing_role.py),
    on loopback: both become error events with tracebacks, and the agent keeps receiving."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path / "events.jsonl"
    config = {"node": "a", "node_id": 1, "role": "probe", "params": {}, "seed": 1, "port": port,
              "nodes": {"a": {"id": 1, "address": "127.0.0.1"}, "b": {"id": 2, "address": "127.0.0.2"}},
              "broadcast": ["127.0.0.1"], "log": str(log)}
    (tmp_path / "config.json").write_text(json.dumps(config))
    script = ("import sys, agents.runtime as r; r.role_module = lambda role: 'tests.failing_role'; "
              f"sys.exit(r.main(['--config', {str(tmp_path / 'config.json')!r}]))")
    agent = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (log.exists() and '"where":"run"' in log.read_text()):
            time.sleep(0.05)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
            for seq in (1, 2):
                peer.sendto(encode(Header(type=MessageType.PROBE, origin=2, sequence=seq, sender=2)),
                            ("127.0.0.1", port))
        while time.monotonic() < deadline and log.read_text().count('"where":"on_message"') < 2:
            time.sleep(0.05)
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=10)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    errors = [e for e in lines if e["event"] == "error"]
    assert [e["where"] for e in errors] == ["run", "on_message", "on_message"]
    assert errors[0]["error"] == "RuntimeError: the loop broke" and "failing_role.py" in errors[0]["traceback"]
    assert [(e["origin"], e["seq"], e["type"]) for e in errors[1:]] == [("b", 1, "PROBE"), ("b", 2, "PROBE")]
    assert sum(e["event"] == "deliver" for e in lines) == 2, "the second message was handled after the first raised"
    assert lines[-1]["event"] == "state" and lines[-1]["state"] == "stopped"
    assert all(list(validator("events").iter_errors(e)) == [] for e in lines)
