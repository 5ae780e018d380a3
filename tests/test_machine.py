"""doctor and images on the real machine."""

from __future__ import annotations

import json
import subprocess
import sys

from testbed.model import IMPAIRMENTS


def test_doctor_json_reports_every_capability_and_a_backend_per_link_property(machine):
    res = subprocess.run([sys.executable, "-m", "testbed", "doctor", "--json"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["ready"] is True and report["problems"] == []
    for name in ("root", "mininet", "docker", "netem", "tc htb", "tc tbf", "nftables", "openvswitch", "java",
                 "pyspark"):
        assert name in report["checks"], name
    assert set(report["link_properties"]) == set(IMPAIRMENTS)
    if report["checks"]["netem"]["ok"]:
        assert set(report["link_properties"].values()) == {"netem"}
    else:
        assert report["link_properties"]["delay"] is None
        assert report["link_properties"]["loss"] == "nftables"
    assert report["base_image"]["source"]


def test_doctor_text_names_the_backends(machine):
    res = subprocess.run([sys.executable, "-m", "testbed", "doctor"], capture_output=True, text=True)
    assert res.returncode == 0
    assert "Link properties" in res.stdout and "Ready" in res.stdout


def test_agent_image_build_is_skipped_when_nothing_changed(images):
    from testbed.images import AGENT_IMAGE, ensure_agent
    from testbed.dockerd import client

    c = client()
    before = c.images.get(AGENT_IMAGE).id
    image_id, built = ensure_agent(c, lambda m: None)
    assert (image_id, built) == (before, False)


def test_agent_image_holds_python_and_the_agents_package(images):
    res = subprocess.run(["docker", "run", "--rm", "--network", "none", "testbed/agent:latest", "python3", "-c",
                          "import agents.roles, sys; print(sys.version_info[0], agents.roles.role_names())"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("3 ") and "idle" in res.stdout


def test_base_image_records_where_it_came_from(images):
    from testbed.images import base_source
    from testbed.dockerd import client

    source = base_source(client())
    assert source == "debootstrap:bookworm" or source.startswith("registry:python:")


def test_a_removal_the_engine_does_not_answer_in_time_is_tried_again():
    """A fake engine that times out once per container, then removes it (the real path runs at the
    end of every real run); one that never answers makes the last pass's error reach the caller."""
    import docker.errors
    import pytest
    import requests

    from testbed.dockerd import remove_containers

    class Api:
        def __init__(self, stalls):
            self.stalls, self.removed, self.calls = stalls, [], 0

        def remove_container(self, cid, force, v):
            self.calls += 1
            if cid == "gone":
                raise docker.errors.NotFound("no such container")
            if self.stalls.get(cid, 0) > 0:
                self.stalls[cid] -= 1
                raise requests.exceptions.ReadTimeout("read timed out (read timeout=120)")
            self.removed.append(cid)

    class Client:
        def __init__(self, stalls):
            self.api = Api(stalls)

    c = Client({"a": 1, "b": 2})
    remove_containers(c, ["a", "b", "c", "gone"])
    assert sorted(c.api.removed) == ["a", "b", "c"] and c.api.calls == 4 + 2 + 1
    stuck = Client({"a": 99})
    with pytest.raises(requests.exceptions.ReadTimeout):
        remove_containers(stuck, ["a", "b"])
    assert stuck.api.removed == ["b"] and stuck.api.calls == 2 + 1 + 1


def test_a_container_removed_while_the_lab_is_listed_is_not_an_error(machine, monkeypatch):
    """The real SDK against the real engine, with the engine's list answering a container that
    is gone by the time it would be inspected (a lab tearing down beside `testbed clean`, which
    crashed on it with NotFound)."""
    from testbed import cleanup, dockerd

    gone = {"Id": "0" * 64, "Names": ["/tb-gone"], "Labels": {}, "State": "running"}
    real_client = dockerd.client

    def client_whose_list_is_late(**kw):
        c = real_client(**kw)
        listed = c.api.containers
        c.api.containers = lambda **filters: listed(**filters) + [gone]
        return c

    assert "0" * 64 in dockerd.lab_containers(client_whose_list_is_late(), "no-such-lab")
    monkeypatch.setattr(dockerd, "client", client_whose_list_is_late)
    assert not any("tb-gone" in owner for owner in cleanup.live_owners())
