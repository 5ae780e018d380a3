"""Shared fixtures, and the markers that tell the kinds of test apart.

- `network`: builds real Mininet networks with real containers (or starts a real sshd); needs
  root, a running Docker engine and the images from `./setup.sh`. Every test that uses the
  `machine`, `images`, `no_leftovers`, `lab_factory` or `sshd` fixtures is marked so
  automatically.
- `spark`: starts a local Spark session (needs Java); every test using the `spark` fixture is
  marked so automatically.

`pytest -m "not network and not spark"` runs the pure tests: no root, Docker or Java.
"""

from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPOLOGIES = os.path.join(ROOT, "topologies")


def topology_path(name: str) -> str:
    return os.path.join(TOPOLOGIES, name)


NETWORK_FIXTURES = {"machine", "images", "no_leftovers", "lab_factory", "sshd"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & NETWORK_FIXTURES:
            item.add_marker(pytest.mark.network)
        if "spark" in names:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for every test that needs one (starting a JVM takes seconds)."""
    from spark_analysis.session import spark_session

    session = spark_session("local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def machine():
    """The machine's capabilities; fails (not skips) when the testbed cannot run here, because
    the README's test command sets the machine up first."""
    from testbed.capabilities import detect

    caps = detect()
    if not caps.ready:
        pytest.fail("the testbed cannot run on this machine: " + "; ".join(caps.problems)
                    + " (run ./setup.sh first)")
    _take_what_killed_runs_left()
    return caps


def _take_what_killed_runs_left() -> None:
    """The suite needs the machine to itself. Objects left by runs that were killed (or by a
    restart of the machine mid-run) are removed once, before the first network test, and said;
    objects of something still running stop the session with what runs, instead of failing every
    test. `no_leftovers` still checks each test's own objects, before and after."""
    from testbed.cleanup import clean_all, leftovers, live_owners

    found = leftovers()
    if not found:
        return
    owners = live_owners()
    if owners:
        pytest.exit("testbed objects of something still running are on this machine "
                    f"({'; '.join(owners)}); the suite needs the machine to itself: wait for it to "
                    "end, or stop it with `testbed clean`", returncode=3)
    cleaned = clean_all()
    print(f"\nremoved what killed testbed runs left on this machine: {found}"
          + (f"; finished their run directories {cleaned.finished_runs}" if cleaned.finished_runs else "")
          + (f"; problems: {cleaned.problems}" if cleaned.problems else ""), file=sys.stderr)


@pytest.fixture(scope="session")
def images(machine):
    from testbed.images import AGENT_IMAGE, STATIC_PROBE_IMAGE, ensure_agent, ensure_static_probe
    from testbed.dockerd import client

    c = client()
    ensure_agent(c, lambda m: print(m, file=sys.stderr))  # built by setup.sh; again if agents/ changed
    ensure_static_probe(c, lambda m: print(m, file=sys.stderr))
    return {"agent": AGENT_IMAGE, "static": STATIC_PROBE_IMAGE}


@pytest.fixture
def no_leftovers(machine):
    """Asserts that the test left no testbed object on the machine; cleans up if it did, so that
    one failure does not cascade."""
    from testbed.cleanup import clean_all, leftovers
    from testbed.names import STATE_DIR

    before = leftovers()
    assert not before, f"testbed objects present before the test: {before}"
    dirs_before = set(os.listdir(STATE_DIR)) if os.path.isdir(STATE_DIR) else set()
    yield
    after = leftovers()
    dirs_after = set(os.listdir(STATE_DIR)) if os.path.isdir(STATE_DIR) else set()
    if dirs_after - dirs_before:
        after["lab state or working directories"] = sorted(dirs_after - dirs_before)
    if after:
        clean_all()
    assert not after, f"the test left testbed objects behind: {after}"


@pytest.fixture
def lab_factory(no_leftovers, images):
    """Build labs in-process; every lab is stopped at the end of the test whatever happens."""
    from testbed.network import Lab

    labs = []

    def make(topo, **kwargs):
        lab = Lab(topo, **kwargs)
        labs.append(lab)
        lab.check()
        lab.start()
        return lab

    yield make
    for lab in labs:
        lab.stop()

