"""benchmarks/abc_model.py: the authors' cluster as a Markov chain, the reference the AbC
reproduction compares the emulated cluster with."""

import os
import statistics
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

from abc_model import Cluster, Ring, Tree, configurations, main  # noqa: E402


def test_ids_are_given_once_and_every_component_delivers_in_id_order():
    model = Cluster(3, 12, None, "random", seed=7).run(300)
    ids = sorted(model.sent_at)
    assert ids == list(range(len(ids))) and len(ids) > 50
    for n, got in model.handled.items():
        assert model.owner[n] not in got, "a sender does not deliver its own message"
    for c in range(model.C):
        mine = sorted((t, n) for n, got in model.handled.items() for comp, t in got.items() if comp == c)
        assert [n for _, n in mine] == sorted(n for _, n in mine), f"component {c} delivered out of id order"
    # the data providers: only the chosen send
    dp = Cluster(3, 12, 2, "free", seed=7).run(300)
    assert len(set(dp.owner.values())) == 2 and sum(dp.sends) == 2


@pytest.mark.parametrize("make", [lambda: Ring(4, 3, None, "arrival", seed=3), lambda: Ring(4, 3, None, "in-order", seed=3),
                                  lambda: Tree(3, 2, 2, None, seed=3), lambda: Ring(5, 2, 3, "arrival", seed=3)],
                         ids=["ring-arrival", "ring-in-order", "tree", "ring-dp"])
def test_rings_and_trees_give_each_id_once_and_deliver_every_message_to_all_in_order(make):
    model = make().run(200)
    ids = sorted(model.sent_at)
    assert ids == list(range(len(ids))) and len(ids) > 20
    for c in range(model.C):
        mine = [n for t, n in sorted((t, n) for n, got in model.handled.items() for comp, t in got.items() if comp == c)]
        assert mine == sorted(mine), f"component {c} delivered out of id order"
    early = [n for n in ids if model.sent_at[n] < 150]
    assert all(len(model.handled.get(n, {})) == model.C - 1 for n in early), "a message missed a component"
    assert len(model.done) >= len(early)


def test_every_configuration_the_paper_names_is_modelled():
    keys = set(configurations())
    for scenario, infrastructure in [("ci", "C[10,155]"), ("ci", "C[20,155]"), ("ci", "C[31,155]"), ("ci", "R[5,31]"),
                                     ("ci", "R[31,5]"), ("ci", "T[5,2,5]"), ("ci", "T[3,5,5]"), ("dp", "C[31,155]"),
                                     ("dp", "R[31,5]"), ("dp", "T[3,5,5]")]:
        assert any(k.startswith(f"{scenario}/{infrastructure}/") for k in keys), (scenario, infrastructure)
    tree = configurations()["ci/T[5,2,5]/authors"](1)
    assert tree.S == 31 and tree.C == 155, "T[5,2,5]: 31 servers in 5 levels, 5 components each"


def test_the_free_dispatch_follows_the_chain_and_the_random_one_shrinks_with_more_slots():
    """Free slots: the gap is the chain of rule Snd alone, the next owner's place in the previous
    message's forwarding (uniform: about (C - 2) / 2 transmissions) plus its own data transmission
    and the first forward, each at λt = 15. Random slots: a message can wait behind a slot's
    backlog, which more slots shorten (the paper's 6 with 10 servers, 5.5 with 31)."""
    def gaps(servers, dispatch):
        return [Cluster(servers, 40, None, dispatch, seed).run(600).measures()["time_gap"] for seed in range(1, 5)]

    free = gaps(20, "free")
    assert statistics.mean(free) == pytest.approx((38 / 2 + 2) / 15, rel=0.08)
    two, five, twenty = gaps(2, "random"), gaps(5, "random"), gaps(20, "random")
    assert min(two) > max(five) and min(five) > max(twenty)
    assert statistics.mean(twenty) > statistics.mean(free)


def test_a_staggered_start_puts_the_first_wave_in_node_order_and_shortens_the_gap_at_the_horizon():
    """Components started one after another (their first requests `stagger` apart, the testbed's
    start before its agents were signalled in one sweep): the first round's ids go in component
    order, and the horizon cuts a round whose owners are the first components, the earliest in
    every forwarding, so the next owner's mean rank and the gap at the horizon fall below the
    together start's. Started together the first round's order is the think times'."""
    def run(stagger, seed, horizon=500):
        model = Cluster(10, 60, None, "free", seed, stagger=stagger).run(horizon)
        return model, model.measures(horizon)

    def first_wave(model):  # the owners in the order of their first ids
        return list(dict.fromkeys(model.owner[n] for n in sorted(model.owner)))

    for seed in (1, 2, 3):
        assert first_wave(run(10.0, seed, 1000)[0]) == list(range(60))
        assert first_wave(run(0.0, seed)[0]) != list(range(60))
    pairs = [(run(0.0, s)[1], run(0.3, s)[1]) for s in range(1, 6)]
    for measure in ("next_owner_rank", "time_gap"):
        assert statistics.mean(b[measure] for _, b in pairs) < statistics.mean(a[measure] for a, _ in pairs), measure


def test_bad_arguments_are_refused_with_exit_2(capsys, tmp_path):
    assert main(["--seeds", "0", "--out", str(tmp_path / "x.json")]) == 2
    assert main(["--horizon", "nan", "--out", str(tmp_path / "x.json")]) == 2
    assert main(["--only", "C[7,155]", "--out", str(tmp_path / "x.json")]) == 2
    assert "--only 'C[7,155]'" in capsys.readouterr().err and not (tmp_path / "x.json").exists()
    with pytest.raises(ValueError, match="random or free"):
        Cluster(2, 5, None, "fifo", seed=1)


def test_the_hop_time_is_a_handling_twice_and_a_transmission_on_an_idle_ring_and_grows_with_the_handling():
    """`hop_time` (what benchmarks/abc_hops.py measures in the runs): one sender on a ring keeps every
    queue empty, so a hop is the handling, the forward (λh each) and one transmission (λt)."""
    def hop(rate_h: float) -> float:
        return statistics.mean(Ring(6, 2, 1, "in-order", seed=s, rate_h=rate_h).run(300).measures()["hop_time"]
                               for s in (1, 2, 3))

    slow, fast = hop(50.0), hop(1000.0)
    assert slow == pytest.approx(2 / 50 + 1 / 15, rel=0.1) and fast == pytest.approx(2 / 1000 + 1 / 15, rel=0.1)
    assert Cluster(3, 12, 2, "free", seed=1).run(50).measures().get("hop_time") is None, "a cluster has no hops"


def test_hops_are_measured_from_a_servers_first_arrival_to_the_copy_it_passes_on(tmp_path):
    import json

    from abc_hops import hops, main, run_hops

    def receive(node, sender, t_ms, seq=0):
        return json.dumps({"t": int(t_ms * 1e6), "node": node, "event": "receive", "type": "ABC_DATA",
                           "origin": "c1", "seq": seq, "sender": sender})

    logs = {"srv1": [receive("srv1", "c1", 0), receive("srv1", "srv3", 40), '{"t": 5, "node": "srv1", "ev'],
            "srv2": [receive("srv2", "srv1", 10), receive("srv2", "srv1", 12)],
            "srv3": [receive("srv3", "srv2", 25), json.dumps({"t": 26, "event": "send", "type": "ABC_DATA"})]}
    assert sorted(h / 1e6 for h in hops(logs)) == [10, 12, 15, 15]
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    for name, lines in logs.items():
        (run / "logs" / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    nodes = {n: {"role": "abc-ring-server", "params": {"time_unit_ms": 100}} for n in logs}
    nodes["c1"] = {"role": "abc-component", "params": {"time_unit_ms": 100}}
    (run / "manifest.json").write_text(json.dumps({"topology": {"nodes": nodes}, "time_dilation": 2}))
    got = run_hops(str(run))
    assert got["hops"] == 4 and got["wall_ms"] == pytest.approx(13) and got["mean_ms"] == pytest.approx(6.5)
    assert got["mean_time_units"] == pytest.approx(0.065)
    assert main([str(tmp_path / "nowhere"), "--out", str(tmp_path / "out.json")]) == 2
    assert not (tmp_path / "out.json").exists()
    # an experiment directory read in two slices (runs.csv names only the last): both points kept
    exp = tmp_path / "abc-x"
    (exp / "runs").mkdir(parents=True)
    run.rename(exp / "runs" / "ring.k=2-s1")
    out = str(tmp_path / "out.json")
    for point in ("ring.k=2", "tree.k=2"):
        if point == "tree.k=2":
            (exp / "runs" / "ring.k=2-s1").rename(exp / "runs" / "tree.k=2-s1")
        (exp / "runs.csv").write_text(f"run,point,seed,fidelity\n{point}-s1,{point},1,faithful\n")
        assert main([str(exp), "--out", out]) == 0
    points = json.loads(open(out).read())["experiments"]["abc-x"]
    assert sorted(points) == ["ring.k=2", "tree.k=2"] and points["tree.k=2"]["hop_ms"]["mean"] == pytest.approx(6.5)
