"""Radio mobility (testbed.radio.mobility): static nodes, random waypoint, ns-2 and CSV traces, and
the `move` action's redirect. Pure: no machine, no network."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.errors import ValidationError
from testbed.radio import mobility
from testbed.radio.mobility import load_trace, parse_csv, parse_ns2, random_waypoint, static

from .conftest import ROOT

AREA = ((0.0, 0.0), (1000.0, 600.0))
NODES = ["a", "b", "c", "d", "e"]


def close(p, q, tol=1e-9):
    return all(abs(x - y) <= tol for x, y in zip(p, q)) and len(p) == len(q) == 3


def rwp(seed=1, node="n1", **kw):
    args = dict(area=AREA, speed=(1.0, 20.0), pause=(0.0, 30.0))
    args.update(kw)
    return random_waypoint(seed, node, **args)


# --- static ---------------------------------------------------------------------------------------

def test_static_stays_put_and_describes_itself():
    track = static((10, 20, 1.5))
    for t in (0, 0.5, 1, 1e6):
        assert track.at(t) == (10.0, 20.0, 1.5)
    assert track.describe() == {"model": "static", "position": [10.0, 20.0, 1.5]}
    json.dumps(track.describe())


def test_static_rejects_a_bad_position():
    with pytest.raises(ValueError):
        static((1, 2))
    with pytest.raises(ValueError):
        static((1, float("nan"), 0))


# --- random waypoint ------------------------------------------------------------------------------

TIMES = [i * 0.7 for i in range(3000)]


def test_random_waypoint_is_deterministic_for_a_seed_and_node():
    one, two = rwp(), rwp()
    assert [one.at(t) for t in TIMES] == [two.at(t) for t in TIMES]
    # asked in another order, the same answers
    three = rwp()
    assert [three.at(t) for t in reversed(TIMES)] == [one.at(t) for t in reversed(TIMES)]


def test_random_waypoint_is_the_same_in_a_fresh_process():
    code = ("import json; from testbed.radio.mobility import random_waypoint as r; "
            "t = r(42, 'node-7', ((0.0, 0.0), (1000.0, 600.0)), (1.0, 20.0), (0.0, 30.0)); "
            "print(json.dumps([t.at(x * 13.3) for x in range(200)]))")
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    here = rwp(seed=42, node="node-7")
    assert [tuple(p) for p in json.loads(out.stdout)] == [here.at(x * 13.3) for x in range(200)]


def test_seeds_and_nodes_give_different_paths_and_nodes_are_independent():
    base = [rwp(seed=1, node="n1").at(t) for t in TIMES[:200]]
    assert [rwp(seed=2, node="n1").at(t) for t in TIMES[:200]] != base
    assert [rwp(seed=1, node="n2").at(t) for t in TIMES[:200]] != base
    # other nodes' tracks, built and advanced first, do not change n1's
    others = [rwp(seed=1, node=f"x{i}") for i in range(20)]
    for other in others:
        other.at(5000)
    assert [rwp(seed=1, node="n1").at(t) for t in TIMES[:200]] == base


@pytest.mark.parametrize("seed", range(5))
def test_positions_stay_inside_the_area(seed):
    track = rwp(seed=seed, z=2.0)
    for t in TIMES:
        x, y, z = track.at(t)
        assert 0.0 <= x <= 1000.0 and 0.0 <= y <= 600.0 and z == 2.0


@pytest.mark.parametrize("seed", range(5))
def test_speed_never_exceeds_the_maximum(seed):
    track = rwp(seed=seed, speed=(2.0, 7.5), pause=(0.0, 5.0))
    dt = 0.25
    previous = track.at(0.0)
    for i in range(1, 8000):
        here = track.at(i * dt)
        assert math.dist(previous, here) / dt <= 7.5 + 1e-6
        previous = here


def test_a_fixed_speed_is_kept_while_moving():
    track = rwp(speed=(5.0, 5.0), pause=(0.0, 0.0))
    dt = 0.1
    speeds = [math.dist(track.at(i * dt), track.at((i + 1) * dt)) / dt for i in range(5000)]
    assert max(speeds) <= 5.0 + 1e-6
    # except across a waypoint (a turn), it goes at exactly 5 m/s and never stops
    assert sum(1 for s in speeds if abs(s - 5.0) < 1e-6) > 0.9 * len(speeds)
    assert min(speeds) > 0


def test_nodes_pause_at_waypoints():
    track = rwp(speed=(10.0, 20.0), pause=(5.0, 10.0))
    still, longest, previous = 0.0, 0.0, track.at(0.0)
    for i in range(1, 20000):
        here = track.at(i * 0.1)
        still = still + 0.1 if here == previous else 0.0
        longest = max(longest, still)
        previous = here
    assert 4.8 <= longest <= 10.0 + 1e-6


def test_no_pause_means_no_standing_still():
    track = rwp(pause=(0.0, 0.0))
    positions = [track.at(t) for t in TIMES]
    assert all(p != q for p, q in zip(positions, positions[1:]))


def test_legs_are_drawn_lazily_and_remembered():
    track = rwp()
    early = track.at(5.0)
    far = track.at(10_000.0)
    assert 0 <= far[0] <= 1000 and 0 <= far[1] <= 600
    assert track.at(5.0) == early
    fresh = rwp()
    assert fresh.at(10_000.0) == far        # straight to the far time: the same legs
    stepwise = rwp()
    for t in range(0, 10_001, 7):
        stepwise.at(float(t))
    assert stepwise.at(10_000.0) == far


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=5000, allow_nan=False), min_size=1, max_size=40))
def test_any_order_of_times_gives_the_same_positions(times):
    ordered = rwp(seed=9)
    expected = {t: ordered.at(t) for t in sorted(times)}
    shuffled = rwp(seed=9)
    assert all(shuffled.at(t) == expected[t] for t in times)


def test_a_start_is_the_position_at_time_zero_and_sets_the_height():
    track = rwp(start=(100.0, 200.0, 3.0))
    assert track.at(0.0) == (100.0, 200.0, 3.0)
    assert all(track.at(t)[2] == 3.0 for t in TIMES[:500])
    assert track.describe()["start"] == [100.0, 200.0, 3.0]


def test_random_waypoint_describes_its_parameters():
    d = rwp(seed=3, node="n4").describe()
    assert d == {"model": "random-waypoint", "seed": 3, "area": [[0.0, 0.0], [1000.0, 600.0]],
                 "speed": [1.0, 20.0], "pause": [0.0, 30.0], "start": None, "z": 0.0}
    json.dumps(d)


@pytest.mark.parametrize("kw, fragment", [
    (dict(area=((0, 0), (0, 10))), "x0 < x1"),
    (dict(area=((0, 10), (10, 5))), "x0 < x1 and y0 < y1"),
    (dict(area=((0, 0, 0), (1, 1))), "two corners"),
    (dict(area=((0, 0), (float("inf"), 1))), "finite"),
    (dict(speed=(0.0, 5.0)), "> 0"),
    (dict(speed=(-1.0, 5.0)), "> 0"),
    (dict(speed=(6.0, 5.0)), "greater than max"),
    (dict(speed=(1.0, float("nan"))), "finite"),
    (dict(speed=5.0), "pair"),
    (dict(pause=(-1.0, 5.0)), ">= 0"),
    (dict(pause=(6.0, 5.0)), "greater than max"),
    (dict(start=(2000.0, 1.0, 0.0)), "outside the area"),
    (dict(z=float("nan")), "finite"),
])
def test_random_waypoint_rejects_bad_parameters(kw, fragment):
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(")):
        rwp(**kw)


def test_many_nodes_at_one_tick_is_cheap_enough_to_call():
    # not timed (machines differ): just the shape of the ticker's call pattern
    tracks = [rwp(seed=5, node=f"n{i}") for i in range(500)]
    for tick in range(0, 300):
        positions = [track.at(float(tick)) for track in tracks]
    assert len(positions) == 500


# --- redirect (the `move` action) -----------------------------------------------------------------

def test_redirect_at_once():
    track = static((0.0, 0.0, 0.0))
    track.redirect(10.0, (50.0, 60.0, 0.0), None)
    assert track.at(9.999) == (0.0, 0.0, 0.0)
    assert track.at(10.0) == (50.0, 60.0, 0.0)
    assert track.at(1e5) == (50.0, 60.0, 0.0)
    assert track.describe() == {"model": "static", "position": [0.0, 0.0, 0.0],
                                "moves": [{"at": 10.0, "to": [50.0, 60.0, 0.0], "speed": None}]}
    json.dumps(track.describe())


def test_redirect_with_infinite_speed_is_at_once():
    track = static((0.0, 0.0, 0.0))
    track.redirect(1.0, (3.0, 4.0, 0.0), float("inf"))
    assert track.at(1.0) == (3.0, 4.0, 0.0)
    json.dumps(track.describe())


def test_redirect_at_a_speed():
    track = static((0.0, 0.0, 0.0))
    track.redirect(10.0, (30.0, 40.0, 0.0), 5.0)    # 50 m at 5 m/s: arrives at 20 s
    assert track.at(10.0) == (0.0, 0.0, 0.0)
    assert close(track.at(15.0), (15.0, 20.0, 0.0))
    assert close(track.at(19.0), (27.0, 36.0, 0.0))
    assert track.at(20.0) == (30.0, 40.0, 0.0)
    assert track.at(500.0) == (30.0, 40.0, 0.0)
    assert track.at(5.0) == (0.0, 0.0, 0.0)


def test_redirect_replaces_a_random_waypoint_from_then_on():
    track, reference = rwp(), rwp()
    before = [reference.at(t) for t in TIMES[:200]]      # up to 139.3 s
    here = reference.at(150.0)
    track.at(3000.0)                                      # legs drawn past the redirect are dropped
    track.redirect(150.0, (500.0, 300.0, 0.0), 2.0)
    assert [track.at(t) for t in TIMES[:200]] == before
    assert track.at(150.0) == here
    arrival = 150.0 + math.dist(here, (500.0, 300.0, 0.0)) / 2.0
    midway = tuple((a + b) / 2 for a, b in zip(here, (500.0, 300.0, 0.0)))
    assert close(track.at((150.0 + arrival) / 2), midway, 1e-6)
    assert track.at(arrival) == (500.0, 300.0, 0.0)
    assert track.at(arrival + 10_000) == (500.0, 300.0, 0.0)
    assert track.describe()["model"] == "random-waypoint"
    assert track.describe()["moves"] == [{"at": 150.0, "to": [500.0, 300.0, 0.0], "speed": 2.0}]


def test_a_later_redirect_starts_from_where_the_earlier_one_got_to():
    track = static((0.0, 0.0, 0.0))
    track.redirect(0.0, (100.0, 0.0, 0.0), 10.0)
    track.redirect(5.0, (50.0, 50.0, 0.0), 10.0)       # at 5 s it is at (50, 0): 50 m more
    assert close(track.at(5.0), (50.0, 0.0, 0.0))
    assert close(track.at(7.5), (50.0, 25.0, 0.0))
    assert track.at(10.0) == (50.0, 50.0, 0.0)
    assert [m["at"] for m in track.describe()["moves"]] == [0.0, 5.0]


def test_redirect_before_a_trace_starts():
    track = parse_csv("10,a,100,0\n20,a,200,0\n", "t.csv", NODES)["a"]
    track.redirect(5.0, (0.0, 0.0, 0.0), None)
    assert track.at(0.0) == (100.0, 0.0, 0.0)
    assert track.at(5.0) == (0.0, 0.0, 0.0)
    assert track.at(15.0) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize("t, to, speed", [
    (-1.0, (0.0, 0.0, 0.0), None),
    (float("nan"), (0.0, 0.0, 0.0), None),
    (1.0, (0.0, 0.0), None),
    (1.0, (0.0, float("inf"), 0.0), None),
    (1.0, (0.0, 0.0, 0.0), 0.0),
    (1.0, (0.0, 0.0, 0.0), -2.0),
])
def test_redirect_rejects_bad_arguments(t, to, speed):
    with pytest.raises(ValueError):
        static((0.0, 0.0, 0.0)).redirect(t, to, speed)


# --- ns-2 movement files --------------------------------------------------------------------------

NS2 = """\
# nodes: 2, pause: 0.00, max speed: 10.00
$node_(0) set X_ 0.0
$node_(0) set Y_ 0.0
$node_(0) set Z_ 1.5
$node_(1) set X_ 100.0
$node_(1) set Y_ 100.0

$god_ set-dist 0 1 1
$ns_ at 10.0 "$node_(0) setdest 100.0 0.0 10.0"
$ns_ at 30.0 "$node_(0) setdest 100.0 100.0 5.0"
$ns_ at 40.0 "$node_(0) setdest 0.0 50.0 10.0"
$ns_ at 2.0 "$god_ set-dist 0 1 2"
$ns_ at 5.0 "$node_(1) setdest 200.0 100.0 10.0"
$ns_ at 10.0 "$node_(1) setdest 300.0 100.0 0.0"
$ns_ at 60.0 "$node_(1) set X_ 0.0"
$ns_ at 70.0 "$node_(1) setdest 0.0 0.0 10.0"
"""


def test_ns2_initial_positions_and_setdest():
    tracks = parse_ns2(NS2, "moves.ns2", ["a", "b", "c"])
    assert set(tracks) == {"a", "b"}                      # c is not in the trace: no track
    a = tracks["a"]
    assert a.at(0.0) == (0.0, 0.0, 1.5)
    assert a.at(10.0) == (0.0, 0.0, 1.5)
    assert close(a.at(15.0), (50.0, 0.0, 1.5))
    assert a.at(20.0) == (100.0, 0.0, 1.5)               # arrived: stops
    assert a.at(29.0) == (100.0, 0.0, 1.5)
    assert close(a.at(35.0), (100.0, 25.0, 1.5))
    # interrupted at 40 s at (100, 50), then 100 m west at 10 m/s
    assert close(a.at(40.0), (100.0, 50.0, 1.5))
    assert close(a.at(45.0), (50.0, 50.0, 1.5))
    assert close(a.at(50.0), (0.0, 50.0, 1.5))
    assert close(a.at(1000.0), (0.0, 50.0, 1.5))
    assert a.describe() == {"model": "trace", "file": "moves.ns2", "format": "ns2"}


def test_ns2_speed_zero_stops_and_a_timed_set_jumps():
    b = parse_ns2(NS2, "moves.ns2", ["a", "b", "c"])["b"]
    assert b.at(0.0) == (100.0, 100.0, 0.0)              # no Z_: z is 0
    assert close(b.at(7.5), (125.0, 100.0, 0.0))
    assert close(b.at(10.0), (150.0, 100.0, 0.0))        # speed 0 at 10 s: stays where it is
    assert close(b.at(59.0), (150.0, 100.0, 0.0))
    assert close(b.at(60.0), (0.0, 100.0, 0.0))          # X_ set at 60 s
    assert close(b.at(65.0), (0.0, 100.0, 0.0))
    assert close(b.at(75.0), (0.0, 50.0, 0.0))
    assert close(b.at(80.0), (0.0, 0.0, 0.0))


def test_ns2_lines_need_not_be_sorted_by_time():
    lines = NS2.splitlines()
    moves = [line for line in lines if line.startswith("$ns_")]
    rest = [line for line in lines if not line.startswith("$ns_")]
    shuffled = "\n".join(rest + list(reversed(moves))) + "\n"
    a, b = parse_ns2(NS2, "m", NODES), parse_ns2(shuffled, "m", NODES)
    for name in ("a", "b"):
        for t in range(0, 100):
            assert close(a[name].at(t / 1.1), b[name].at(t / 1.1))


def test_ns2_events_at_the_same_time_apply_in_file_order():
    text = ('$node_(0) set X_ 0\n$node_(0) set Y_ 0\n'
            '$ns_ at 5 "$node_(0) setdest 100 0 10"\n'
            '$ns_ at 5 "$node_(0) setdest 0 100 10"\n')
    a = parse_ns2(text, "m", NODES)["a"]
    assert close(a.at(10.0), (0.0, 50.0, 0.0))


def test_ns2_a_node_without_movement_stays():
    a = parse_ns2("$node_(0) set X_ 3\n$node_(0) set Y_ 4\n", "m", NODES)["a"]
    assert a.at(0.0) == a.at(100.0) == (3.0, 4.0, 0.0)


def test_ns2_accepts_setdest_style_spacing_and_indentation():
    text = ("  $node_(0)  set X_   1.0  \n\t$node_(0) set Y_ 2.0\n"
            '$ns_   at  1.0   "$node_(0)   setdest 11.0 2.0 5.0"\n')
    a = parse_ns2(text, "m", NODES)["a"]
    assert close(a.at(3.0), (11.0, 2.0, 0.0))


NS2_HEAD = "$node_(0) set X_ 0\n$node_(0) set Y_ 0\n"


@pytest.mark.parametrize("bad, fragment", [
    ("this is not ns-2", "malformed line"),
    ("$node_(0) set X_ abc", "X_ 'abc' is not a number"),
    ("$node_(0) set Y_ nan", "finite"),
    ("$node_(0) set W_ 3", "malformed line"),
    ('$ns_ at -1 "$node_(0) setdest 1 2 3"', "time -1 is negative"),
    ('$ns_ at inf "$node_(0) setdest 1 2 3"', "finite"),
    ('$ns_ at soon "$node_(0) setdest 1 2 3"', "time 'soon' is not a number"),
    ('$ns_ at 1 "$node_(0) setdest 1 2 -3"', "speed -3 is negative"),
    ('$ns_ at 1 "$node_(0) setdest 1 2 fast"', "speed 'fast' is not a number"),
    ('$ns_ at 1 "$node_(0) setdest 1 2"', "setdest or a set"),
    ('$ns_ at 1 "$node_(0) frobnicate"', "setdest or a set"),
    ('$ns_ at 1 $node_(0) setdest 1 2 3', "malformed line"),
    ('$node_(7) set X_ 1', "trace names node index 7, but the segment has 5 members (node_(0) … node_(4))"),
    ('$ns_ at 1 "$node_(5) setdest 1 2 3"', "node index 5"),
])
def test_ns2_malformed_lines_are_located(bad, fragment):
    text = "# header\n" + NS2_HEAD + "\n" + bad + "\n" + '$ns_ at 1 "$node_(0) setdest 1 1 1"\n'
    with pytest.raises(ValidationError) as info:
        parse_ns2(text, "moves.ns2", NODES)
    err = info.value
    assert (err.file, err.field, err.line) == ("moves.ns2", "trace", 5)
    assert fragment in err.message
    assert bad.strip() in err.message                    # the line is quoted
    assert "setdest" in err.allowed
    assert str(err).startswith("moves.ns2:5: trace: ")


def test_ns2_unknown_index_with_a_one_node_segment():
    with pytest.raises(ValidationError) as info:
        parse_ns2("$node_(1) set X_ 1\n", "m", ["a"])
    assert "the segment has 1 member (node_(0))" in info.value.message


def test_ns2_a_moving_node_needs_an_initial_position():
    text = '$node_(0) set X_ 0\n$node_(0) set Y_ 0\n# b\n$ns_ at 1 "$node_(1) setdest 1 2 3"\n'
    with pytest.raises(ValidationError) as info:
        parse_ns2(text, "m.ns2", NODES)
    assert info.value.line == 4
    assert "node_(1) has no initial position" in info.value.message and "X_ or Y_" in info.value.message


def test_ns2_a_node_needs_both_x_and_y():
    with pytest.raises(ValidationError) as info:
        parse_ns2("$node_(0) set X_ 0\n$node_(0) set Y_ 0\n$node_(2) set X_ 5\n", "m", NODES)
    assert info.value.line == 3
    assert "never sets its Y_" in info.value.message


# --- CSV ------------------------------------------------------------------------------------------

def test_csv_with_header_names_and_interpolation():
    text = "time,node,x,y\n0,a,0,0\n10,a,100,0\n20,a,100,50\n5,b,10,10\n"
    tracks = parse_csv(text, "pos.csv", NODES)
    assert set(tracks) == {"a", "b"}
    a = tracks["a"]
    assert a.at(0.0) == (0.0, 0.0, 0.0)
    assert close(a.at(2.5), (25.0, 0.0, 0.0))
    assert a.at(10.0) == (100.0, 0.0, 0.0)
    assert close(a.at(15.0), (100.0, 25.0, 0.0))
    assert a.at(99.0) == (100.0, 50.0, 0.0)
    b = tracks["b"]
    assert b.at(0.0) == b.at(5.0) == b.at(50.0) == (10.0, 10.0, 0.0)
    assert a.describe() == {"model": "trace", "file": "pos.csv", "format": "csv"}


def test_csv_without_header_with_indices_z_and_unsorted_rows():
    text = "# t,node,x,y,z\n\n10, 1, 10, 0, 4\n0,1,0,0,2\n5,c,1,2,3\n"
    tracks = parse_csv(text, "pos.csv", NODES)
    assert set(tracks) == {"b", "c"}
    assert tracks["b"].at(0.0) == (0.0, 0.0, 2.0)
    assert close(tracks["b"].at(5.0), (5.0, 0.0, 3.0))
    assert tracks["c"].at(0.0) == (1.0, 2.0, 3.0)


def test_csv_header_may_be_t_and_a_repeated_sample_is_one():
    tracks = parse_csv("T,node,x,y\n1,a,1,1\n1,a,1,1\n3,a,3,1\n", "p", NODES)
    assert close(tracks["a"].at(2.0), (2.0, 1.0, 0.0))


@pytest.mark.parametrize("bad, fragment", [
    ("1,a,2", "expected 4 or 5 columns"),
    ("1,a,2,3,4,5", "expected 4 or 5 columns"),
    ("x,a,2,3", "time 'x' is not a number"),
    ("1,a,two,3", "x 'two' is not a number"),
    ("1,a,2,nan", "finite"),
    ("1,a,2,3,zz", "z 'zz' is not a number"),
    ("-1,a,2,3", "time -1 is negative"),
    ("1,zed,2,3", "unknown node 'zed'"),
    ("1,9,2,3", "node index 9, but the segment has 5 members"),
    ("1,-1,2,3", "unknown node '-1'"),
    ("time,node,x,y", "time 'time' is not a number"),   # a header only on the first line
    ("0,a,5,5", "has another position at time 0.0 s (line 2)"),
])
def test_csv_errors_are_located(bad, fragment):
    text = "time,node,x,y\n0,a,0,0\n\n" + bad + "\n9,a,1,1\n"
    with pytest.raises(ValidationError) as info:
        parse_csv(text, "pos.csv", NODES)
    err = info.value
    assert (err.file, err.field, err.line) == ("pos.csv", "trace", 4)
    assert fragment in err.message


def test_csv_unknown_node_lists_known_names():
    nodes = [f"n{i}" for i in range(40)]
    with pytest.raises(ValidationError) as info:
        parse_csv("0,zed,1,1\n", "p", nodes)
    assert "n0, n1, n2" in info.value.allowed and "40 in all" in info.value.allowed


@pytest.mark.parametrize("text", ["", "time,node,x,y\n", "# nothing\n\n"])
def test_csv_without_samples_is_an_error(text):
    with pytest.raises(ValidationError, match="no samples"):
        parse_csv(text, "empty.csv", NODES)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.floats(-1e4, 1e4), st.floats(-1e4, 1e4)),
                min_size=1, max_size=30, unique_by=lambda s: s[0]))
def test_csv_track_passes_through_its_samples(samples):
    text = "".join(f"{t / 10},a,{x!r},{y!r}\n" for t, x, y in samples)
    track = parse_csv(text, "p", NODES)["a"]
    ordered = sorted(samples)
    for t, x, y in ordered:
        assert track.at(t / 10) == (x, y, 0.0)
    for (t0, x0, y0), (t1, x1, y1) in zip(ordered, ordered[1:]):
        x, y, _ = track.at((t0 + t1) / 20)
        assert min(x0, x1) - 1e-6 <= x <= max(x0, x1) + 1e-6 and min(y0, y1) - 1e-6 <= y <= max(y0, y1) + 1e-6
    assert track.at(0.0) == (ordered[0][1], ordered[0][2], 0.0)
    assert track.at(2000.0) == (ordered[-1][1], ordered[-1][2], 0.0)


# --- load_trace -----------------------------------------------------------------------------------

def test_load_trace_guesses_the_format(tmp_path):
    ns2 = tmp_path / "moves.tcl"
    ns2.write_text(NS2)
    csv = tmp_path / "pos.txt"
    csv.write_text("0,a,0,0\n10,a,10,0\n")
    assert load_trace(str(ns2), None, NODES, "radio.trace")["a"].describe()["format"] == "ns2"
    loaded = load_trace(str(csv), None, NODES, "radio.trace")
    assert loaded["a"].describe() == {"model": "trace", "file": str(csv), "format": "csv"}
    assert close(loaded["a"].at(5.0), (5.0, 0.0, 0.0))
    assert load_trace(str(csv), "csv", NODES, "radio.trace")["a"].at(10.0) == (10.0, 0.0, 0.0)


def test_load_trace_reports_the_trace_file_and_line(tmp_path):
    path = tmp_path / "bad.ns2"
    path.write_text(NS2_HEAD + "oops\n")
    with pytest.raises(ValidationError) as info:
        load_trace(str(path), "ns2", NODES, "radio.trace")
    assert (info.value.file, info.value.line) == (str(path), 3)


def test_load_trace_an_unreadable_file_names_the_field(tmp_path):
    with pytest.raises(ValidationError) as info:
        load_trace(str(tmp_path / "missing.ns2"), None, NODES, "segments.air.mobility.file")
    assert info.value.field == "segments.air.mobility.file"
    assert "no such trace file" in info.value.message
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValidationError) as info:
        load_trace(str(binary), "csv", NODES, "f")
    assert info.value.field == "f" and "UTF-8" in info.value.message


def test_load_trace_rejects_an_unknown_format(tmp_path):
    path = tmp_path / "x"
    path.write_text("0,a,0,0\n")
    with pytest.raises(ValidationError) as info:
        load_trace(str(path), "bonnmotion", NODES, "f")
    assert info.value.allowed == "ns2, csv"


def test_guess_format():
    assert mobility.guess_format("# c\n$node_(0) set X_ 1\n") == "ns2"
    assert mobility.guess_format("time,node,x,y\n") == "csv"
