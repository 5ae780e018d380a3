"""The expected shapes of an experiment (testbed/experiment/shapes/) and the statistics they judge
with (testbed/experiment/stats.py): verdicts from the seeds' spread, "not shown" where the
intervals cannot tell, one seed never valid or invalid unless judged on the means, curve families
told apart (a property test over generated curves), and grids of quantities in order of value."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testbed.errors import ValidationError
from testbed.experiment import stats
from testbed.experiment.results import Data, summarise
from testbed.experiment.shapes.common import shown
from testbed.experiment.spec import load_experiment

from .test_experiments import workspace

SHAPES = """\
scenarios:
  simple: scenarios/small.yaml
  bounded: scenarios/small.yaml
grid:
  P: {path: workload.defaults.params.rate, values: [1, 2, 3]}
measures: {m: x.y}
references:
  source: a paper
  values:
    - {measure: m, point: {scenario: simple, P: 3}, value: [9, 11]}
    - {measure: m, point: {scenario: bounded, P: 3}, value: 3}
expect:
  - {measure: m, order: [bounded, simple]}
  - {measure: m, trend: increasing, over: P}
  - {measure: m, trend: increasing, over: P, where: {scenario: simple}}
  - {measure: m, ratio: [{scenario: simple, P: 3}, {scenario: bounded, P: 3}], range: [2, 4]}
  - {measure: m, near_reference: 1.5}
"""


def seeds(mean: float, spread: float = 0.01, n: int = 3):
    """n seeds' values around a mean, with a small spread (a fraction of it)."""
    return [mean * (1 + spread * d) for d in np.linspace(-1, 1, n)]


class Judged(dict):
    """{shape name: verdict}, whose values() keep every shape (two may share a name)."""

    def __init__(self, pairs):
        super().__init__(pairs)
        self.all = [v for _, v in pairs]

    def values(self):
        return self.all


def judge(exp, values):
    """The shapes' verdicts with {point: [seed values] or a mean} (a mean: three close seeds)."""
    values = {k: (v if isinstance(v, list) else seeds(v)) for k, v in values.items()}
    data = Data.of(exp, "m", values)
    return Judged([(s.name, s.judge(data)) for s in exp.shapes])


def verdicts(exp, values):
    return [v["verdict"] for v in judge(exp, values).values()]


MEANS = {"simple.P=1": 2, "simple.P=2": 6, "simple.P=3": 10, "bounded.P=1": 1, "bounded.P=2": 2, "bounded.P=3": 3}


def test_shapes_judge_each_free_combination_and_say_unknown_without_values(tmp_path):
    exp = load_experiment(workspace(tmp_path, SHAPES))
    assert verdicts(exp, MEANS) == ["valid"] * 5
    order = judge(exp, MEANS)["m: bounded < simple"]
    assert [g["group"] for g in order["groups"]] == ["P=1", "P=2", "P=3"]  # judged at every P
    test = order["groups"][2]["tests"][0]
    assert test["what"] == "simple − bounded" and test["low"] > 0 and test["estimate"] == pytest.approx(7)
    means = dict(MEANS, **{"bounded.P=2": 7})  # above simple at P=2, and no longer increasing... for bounded only
    got = judge(exp, means)
    assert got["m: bounded < simple"]["verdict"] == "invalid"
    trend = got.all[1]
    assert trend["verdict"] == "invalid" and [g["verdict"] for g in trend["groups"]] == ["valid", "invalid"]
    assert "goes the other way" in trend["groups"][1]["reason"]
    means["simple.P=3"] = 17  # 17 / 3 > 4, and 17 > 11 × 1.5
    got = judge(exp, means)
    ratio = next(v for k, v in got.items() if "/" in k)
    assert ratio["verdict"] == "invalid" and ratio["groups"][0]["ratio"] == pytest.approx(17 / 3)
    near = got["m within a factor 1.5 of the reference"]
    assert [g["verdict"] for g in near["groups"]] == ["invalid", "valid"]
    assert near["groups"][0]["factor"] == pytest.approx(17 / 11)
    del means["bounded.P=1"]
    assert judge(exp, means)["m: bounded < simple"]["verdict"] == "invalid"  # invalid somewhere outweighs unknown
    means = {k: v for k, v in means.items() if k.startswith("simple")}
    assert judge(exp, means)["m: bounded < simple"]["verdict"] == "unknown"


def test_overlapping_intervals_are_not_shown(tmp_path):
    """Means in the expected order whose seeds overlap widely: no ordering, ratio or trend is shown."""
    exp = load_experiment(workspace(tmp_path, SHAPES))
    wide = {"simple.P=1": [1.0, 3.0, 5.0], "simple.P=2": [2.0, 4.0, 6.5], "simple.P=3": [3.0, 5.5, 7.0],
            "bounded.P=1": [0.5, 2.5, 4.5], "bounded.P=2": [1.5, 3.5, 6.0], "bounded.P=3": [2.0, 4.5, 6.8]}
    got = judge(exp, wide)
    order = got["m: bounded < simple"]
    assert order["verdict"] == "not shown" and "contains 0" in order["reason"], order
    low, high = order["groups"][0]["tests"][0]["low"], order["groups"][0]["tests"][0]["high"]
    assert low < 0 < high
    assert got.all[1]["verdict"] == "not shown"
    # the example: a ratio of two-seed means with an interval of [0.77, 3.78] is not shown
    two = {"simple.P=3": [1.2, 2.6], "bounded.P=3": [0.95, 0.93]}
    ratio = next(v for k, v in judge(exp, dict(MEANS, **two)).items() if "/" in k)
    assert ratio["verdict"] == "not shown" and ratio["groups"][0]["tests"][0]["low"] < 2, ratio
    assert "the ratio's interval" in ratio["reason"]


def test_one_seed_is_not_shown_unless_the_file_asks_for_means(tmp_path):
    exp = load_experiment(workspace(tmp_path, SHAPES))
    one = {k: [float(v)] for k, v in MEANS.items()}
    got = judge(exp, one)
    assert {v["verdict"] for v in got.values()} == {"not shown"}
    assert {shown(v) for v in got.values()} == {"not shown (1 seed)"}
    means = load_experiment(workspace(tmp_path, SHAPES.replace("expect:", "judge: means\nexpect:")))
    got = judge(means, one)
    assert [v["verdict"] for v in got.values()] == ["valid"] * 5
    assert {shown(v) for v in got.values()} == {"valid (means only)"}
    # one shape may ask for itself
    exp = load_experiment(workspace(tmp_path, SHAPES.replace("order: [bounded, simple]}",
                                                             "order: [bounded, simple], judge: means}")))
    got = judge(exp, one)
    assert [v["verdict"] for v in got.values()] == ["valid"] + ["not shown"] * 4


def test_near_reference_judges_the_interval_of_ours_against_the_band(tmp_path):
    exp = load_experiment(workspace(tmp_path, SHAPES))
    near = "m within a factor 1.5 of the reference"
    # simple's reference is 9-11: the band is 6-16.5; bounded's is 3: 2-4.5
    values = dict(MEANS, **{"simple.P=3": [15.0, 16.0, 17.0], "bounded.P=3": [3.0, 3.1, 3.2]})
    groups = judge(exp, values)[near]["groups"]
    assert [g["verdict"] for g in groups] == ["not shown", "valid"]
    ratio_test = groups[1]["tests"][1]
    assert ratio_test["what"] == "ours / reference" and ratio_test["estimate"] == pytest.approx(3.1 / 3)


def test_a_reference_of_zero_is_met_by_zeros_only(tmp_path):
    text = SHAPES.replace("value: 3}", "value: 0}").replace("near_reference: 1.5", "near_reference: 1")
    exp = load_experiment(workspace(tmp_path, text))
    near = "m within a factor 1 of the reference"
    assert judge(exp, dict(MEANS, **{"bounded.P=3": [0.0, 0.0, 0.0]}))[near]["groups"][1]["verdict"] == "valid"
    assert judge(exp, dict(MEANS, **{"bounded.P=3": [0.0, 1.0, 0.0]}))[near]["groups"][1]["verdict"] == "not shown"
    assert judge(exp, dict(MEANS, **{"bounded.P=3": [1.0, 1.0, 1.0]}))[near]["groups"][1]["verdict"] == "invalid"


def test_summary_rows_carry_the_reference_and_leave_out_missing_values(tmp_path):
    exp = load_experiment(workspace(tmp_path, SHAPES))
    rows = [{"point": "simple.P=3", "m": 10.0}, {"point": "simple.P=3", "m": 12.0}, {"point": "simple.P=3", "m": None}]
    summary = {r["point"]: r for r in summarise(exp, rows)}
    s = summary["simple.P=3"]
    assert s["n"] == 2 and s["mean"] == 11.0 and s["reference_low"] == 9 and s["reference_high"] == 11
    assert s["ratio_to_reference"] == pytest.approx(1.1) and s["reference_source"] == "a paper"
    assert summary["simple.P=1"]["n"] == 0 and summary["simple.P=1"]["mean"] is None


# -- along a parameter: trend, flat, fit -------------------------------------------------------------

CURVES = """\
scenarios:
  fixed: scenarios/small.yaml
  all: scenarios/small.yaml
grid:
  N: {path: workload.defaults.params.rate, values: [25, 50, 75, 100, 125]}
measures: {m: x.y}
expect:
  - {measure: m, flat: 0.1, over: N, where: {scenario: fixed}}
  - {measure: m, fit: log, over: N, where: {scenario: fixed}}
  - {measure: m, fit: linear, over: N, where: {scenario: all}}
"""
SIZES = [25, 50, 75, 100, 125]


def test_flat_and_fit_shapes_tell_a_constant_a_log_and_a_line_apart(tmp_path):
    exp = load_experiment(workspace(tmp_path, CURVES))
    values = {f"fixed.N={n}": seeds(10 + 3 * math.log(n), 0.002) for n in SIZES}   # 19.7 .. 24.5: not flat
    values.update({f"all.N={n}": seeds(4 + 0.2 * n, 0.002) for n in SIZES})
    flat, log, line = judge(exp, values).values()
    assert (flat["verdict"], log["verdict"], line["verdict"]) == ("invalid", "valid", "valid"), (flat, log, line)
    lam = line["groups"][0]["tests"][1]
    assert lam["what"] == "Box–Cox exponent λ of x" and 0.75 <= lam["low"] <= lam["estimate"] <= lam["high"] <= 1.25
    values.update({f"fixed.N={n}": seeds(v, 0.01) for n, v in zip(SIZES, [103, 99, 100, 97, 96])})  # within ±5 %
    flat, log, _ = judge(exp, values).values()
    assert flat["verdict"] == "valid" and log["verdict"] == "invalid", "no growth: no log curve either"
    values.update({f"all.N={n}": seeds(10 + 3 * math.log(n), 0.002) for n in SIZES})
    assert list(judge(exp, values).values())[2]["verdict"] == "invalid", "a log curve is not a line"
    values.update({f"all.N={n}": seeds(50 - 0.2 * n, 0.002) for n in SIZES})
    line = list(judge(exp, values).values())[2]
    assert line["verdict"] == "invalid" and "falls" in line["reason"], "a falling line does not grow"
    del values["all.N=50"]
    assert list(judge(exp, values).values())[2]["verdict"] == "unknown"


def test_flat_is_an_equivalence_test(tmp_path):
    """Means within ±10 % but intervals that reach past it: not shown, rather than "the means are
    close"; narrow intervals within it: valid; a point entirely outside: invalid."""
    exp = load_experiment(workspace(tmp_path, CURVES))
    flat = "m flat within ±10% over N"
    noisy = {f"fixed.N={n}": [80.0, 100.0, 120.0] for n in SIZES}
    got = judge(exp, noisy)[flat]
    assert got["verdict"] == "not shown" and "crosses ±10% of the mean" in got["reason"]
    assert got["groups"][0]["spread"] == 0.0  # the means alone are identical
    assert judge(exp, {f"fixed.N={n}": [99.0, 100.0, 101.0] for n in SIZES})[flat]["verdict"] == "valid"
    far = {f"fixed.N={n}": [99.0, 100.0, 101.0] for n in SIZES}
    far["fixed.N=125"] = [139.0, 140.0, 141.0]
    assert judge(exp, far)[flat]["verdict"] == "invalid"


def _curve_judge(tmp_path, curve: str, xs, ys_per_x):
    text = CURVES.split("grid:")[0] + "grid:\n  N: {path: workload.defaults.params.rate, values: [" + \
        ", ".join(f"{x:g}" for x in xs) + "]}\nmeasures: {m: x.y}\nexpect:\n" + \
        f"  - {{measure: m, fit: {curve}, over: N, where: {{scenario: all}}}}\n"
    exp = load_experiment(workspace(tmp_path, text))
    values = {p.id: list(v) for p, v in zip([p for p in exp.points if p.scenario.label == "all"], ys_per_x)}
    return list(judge(exp, values).values())[0]


CURVE_FAMILIES = {
    "2^x": lambda x: 2.0 ** x,
    "x²": lambda x: x ** 2,
    "√x": lambda x: np.sqrt(x),
    "0.3% rise": lambda x: 1 + 0.003 * (x - x.min()) / (x.max() - x.min()),
}


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(family=st.sampled_from(sorted(CURVE_FAMILIES)), start=st.floats(0.5, 50), ratio=st.floats(2, 20),
       count=st.integers(3, 7), n_seeds=st.integers(3, 5), noise=st.sampled_from([0.0, 0.001, 0.01, 0.03, 0.1, 0.2]),
       offset=st.floats(-5, 5), scale=st.floats(0.1, 100), rng_seed=st.integers(0, 2**31))
def test_fit_never_judges_a_power_an_exponential_or_a_flat_rise_linear(tmp_path, family, start, ratio, count,
                                                                       n_seeds, noise, offset, scale, rng_seed):
    """Generated curves a + b·f(x) of the families that are not lines (over any positive range of
    x spanning a factor of 2 or more, 3-7 values, 3-5 seeds, relative noise 0-20 %): `fit: linear`
    is never valid, and 2^x and x² are never judged logarithmic either."""
    xs = np.geomspace(start, start * ratio, count).round(3)
    xs = np.unique(xs)
    if len(xs) < 3:
        return
    if family == "2^x":  # 2^x over the range in a few doublings, as a sweep would see it
        shape = CURVE_FAMILIES[family](6 * (xs - xs.min()) / (xs.max() - xs.min()))
    else:
        shape = CURVE_FAMILIES[family](xs)
    mean = offset + scale * shape
    level = np.abs(mean).mean() or 1.0
    rng = np.random.default_rng(rng_seed)
    ys = [list(m + noise * level * rng.standard_normal(n_seeds)) for m in mean]
    verdict = _curve_judge(tmp_path, "linear", xs, ys)
    assert verdict["verdict"] != "valid", (family, verdict)
    if family in ("2^x", "x²"):
        assert _curve_judge(tmp_path, "log", xs, ys)["verdict"] != "valid", family


def test_fit_shows_a_line_and_a_log_measured_precisely(tmp_path):
    xs = [25, 50, 75, 100, 125]
    line = _curve_judge(tmp_path, "linear", xs, [seeds(4 + 0.2 * x, 0.003) for x in xs])
    assert line["verdict"] == "valid", line
    log = _curve_judge(tmp_path, "log", xs, [seeds(10 + 3 * math.log(x), 0.002) for x in xs])
    assert log["verdict"] == "valid", log
    noisy = _curve_judge(tmp_path, "linear", xs, [seeds(4 + 0.2 * x, 0.3) for x in xs])
    assert noisy["verdict"] == "not shown" and "exponent" in noisy["reason"], noisy
    sat = _curve_judge(tmp_path, "saturation", xs, [seeds(10 + 20 * (1 - math.exp(-x / 30)), 0.001) for x in xs])
    assert sat["verdict"] == "valid", sat


def test_a_power_law_is_named_in_the_reason(tmp_path):
    xs = [25, 50, 75, 100, 125]
    got = _curve_judge(tmp_path, "linear", xs, [seeds(5 + 0.01 * x ** 2, 0.002) for x in xs])
    assert got["verdict"] == "invalid" and "x^2" in got["reason"], got


# -- the grid in order -----------------------------------------------------------------------------

def test_grid_values_with_units_are_judged_in_order_of_value(tmp_path):
    """`values: [100s, 50s, 200s]` runs along 50 s, 100 s, 200 s (not as text: 100s, 200s, 50s)."""
    text = SHAPES.replace("values: [1, 2, 3]", "values: [100s, 50s, 200s]").replace(
        "path: workload.defaults.params.rate", "path: duration").split("references:")[0] + \
        "expect:\n  - {measure: m, trend: increasing, over: P}\n  - {measure: m, fit: linear, over: P}\n"
    exp = load_experiment(workspace(tmp_path, text))
    trend, fit = exp.shapes
    assert trend.values == ["50s", "100s", "200s"] and trend.positions == [50.0, 100.0, 200.0]
    values = {f"{s}.P={v}": seeds(x / 10, 0.001) for s in ("simple", "bounded") for v, x in
              (("50s", 50), ("100s", 100), ("200s", 200))}
    got = judge(exp, values)
    assert [v["verdict"] for v in got.values()] == ["valid", "valid"], got


@pytest.mark.parametrize("values, order", [
    (["1mbit", "500kbit", "2mbit"], ["500kbit", "1mbit", "2mbit"]),
    (["64KiB", "1kB", "2MB"], ["1kB", "64KiB", "2MB"]),
    (["50%", "5%", 0.2], ["5%", 0.2, "50%"]),
    (["1m", "30s", 500], [500, "30s", "1m"]),
    (["large", "small", "medium"], ["large", "small", "medium"]),  # names: the file's order
])
def test_quantities_sort_by_value(values, order):
    from testbed.experiment.model import Param

    assert Param("p", "x.p", tuple(values)).ordered() == order


def test_fit_refuses_names_and_non_positive_values(tmp_path):
    for values in ("[small, medium, large]", "[0, 50, 75]"):
        text = CURVES.replace("[25, 50, 75, 100, 125]", values)
        if "small" in values:  # a field that takes names
            text = text.replace("path: workload.defaults.params.rate", "path: description")
        with pytest.raises(ValidationError) as err:
            load_experiment(workspace(tmp_path, text))
        assert "not all positive numbers" in str(err.value)


@pytest.mark.parametrize("entry, field, message", [
    ("{measure: m, flat: 0, over: N}", "expect[0].flat", "is not a tolerance"),
    ("{measure: m, flat: yes, over: N}", "expect[0].flat", "is not a tolerance"),
    ("{measure: m, fit: cubic, over: N}", "expect[0].fit", "unknown curve 'cubic'"),
    ("{measure: m, fit: log, over: Q}", "expect[0].over", "no grid parameter 'Q'"),
    ("{measure: m, fit: log}", "expect[0]", "missing field 'over'"),
    ("{measure: m, fit: log, over: N, judge: loosely}", "expect[0].judge", "'loosely' is not a way to judge"),
    ("{measure: m, trend: increasing, over: N, tolerance: 0.1}", "expect[0].tolerance", "a tolerance is for"),
    ("{measure: m, trend: non-increasing, over: N, tolerance: -1}", "expect[0].tolerance", "is not a tolerance"),
    ("{measure: m, trend: non-increasing, over: N, tolerance: .nan}", "expect[0].tolerance", "is not a tolerance"),
])
def test_shapes_refuse_bad_entries(tmp_path, entry, field, message):
    text = CURVES.split("expect:")[0] + f"expect:\n  - {entry}\n"
    with pytest.raises(ValidationError) as err:
        load_experiment(workspace(tmp_path, text))
    assert err.value.field == field and message in str(err.value), str(err.value)
    assert err.value.line is not None


def test_a_bad_judge_at_the_top_is_refused_with_its_line(tmp_path):
    with pytest.raises(ValidationError) as err:
        load_experiment(workspace(tmp_path, CURVES + "judge: [means]\n"))
    assert err.value.field == "judge" and err.value.line == 11 and "not a way to judge" in str(err.value)


def test_fit_needs_three_values(tmp_path):
    text = CURVES.replace("[25, 50, 75, 100, 125]", "[25, 50]")
    with pytest.raises(ValidationError) as err:
        load_experiment(workspace(tmp_path, text))
    assert "too few to tell a log from a line" in str(err.value)


def test_non_increasing_allows_a_stated_tolerance(tmp_path):
    text = CURVES.split("expect:")[0] + "expect:\n" \
        "  - {measure: m, trend: non-increasing, over: N, where: {scenario: all}, tolerance: 0.05}\n" \
        "  - {measure: m, trend: non-increasing, over: N, where: {scenario: all}}\n"
    exp = load_experiment(workspace(tmp_path, text))
    slight = {f"all.N={n}": seeds(100 + 0.01 * n, 0.001) for n in SIZES}   # rises 1 % over the range
    loose, strict = judge(exp, slight).values()
    assert (loose["verdict"], strict["verdict"]) == ("valid", "invalid"), (loose, strict)
    steep = {f"all.N={n}": seeds(100 + 0.1 * n, 0.001) for n in SIZES}    # rises 10 %
    assert [v["verdict"] for v in judge(exp, steep).values()] == ["invalid", "invalid"]


# -- the statistics themselves ---------------------------------------------------------------------

def test_welch_interval_matches_scipy_and_is_exact_without_spread():
    from scipy import stats as sps

    a, b = [1.0, 2.0, 3.0, 2.5], [2.0, 4.0, 3.5]
    d, low, high = stats.difference(a, b)
    ref = sps.ttest_ind(b, a, equal_var=False).confidence_interval(0.95)
    assert (low, high) == pytest.approx((ref.low, ref.high)) and d == pytest.approx(np.mean(b) - np.mean(a))
    assert stats.difference([2.0, 2.0], [3.0, 3.0]) == (1.0, 1.0, 1.0)
    assert stats.difference([2.0], [3.0, 3.0]) is None


def test_fiellers_interval_covers_the_ratio_and_is_unbounded_near_zero():
    q, low, high = stats.ratio([10.0, 11.0, 12.0], [4.0, 5.0, 6.0])
    assert low < q < high and q == pytest.approx(2.2)
    assert stats.ratio([10.0, 11.0], [-1.0, 1.5])[1:] == (None, None)
    # coverage: over many draws, the 95% interval holds the true ratio about 95% of the time
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(2000):
        _, lo, hi = stats.ratio(list(rng.normal(10, 1, 5)), list(rng.normal(4, 0.5, 5)))
        hits += lo is not None and lo <= 2.5 <= hi
    assert 0.92 <= hits / 2000 <= 0.98


def test_the_exponent_interval_finds_the_power():
    x = np.repeat([1.0, 2.0, 4.0, 8.0], 3)
    lam, low, high = stats.exponent_interval(x, 3 + 2 * x ** 1.5)
    assert lam == pytest.approx(1.5) and low == high == pytest.approx(1.5)
    lam, low, high = stats.exponent_interval(x, np.log(x) + np.random.default_rng(1).normal(0, 0.01, 12))
    assert low <= 0 <= high


def test_plots_draw_no_error_bar_where_a_point_has_no_interval(tmp_path):
    """A point of one seed has no interval: its error bar is NaN (matplotlib draws nothing, no
    caps), not a bar of length 0."""
    import matplotlib

    matplotlib.use("Agg")
    from testbed.experiment.report import _errors, plots

    rows = [{"mean": 5.0, "ci95_low": 4.0, "ci95_high": 6.5}, {"mean": 7.0, "ci95_low": None, "ci95_high": None}]
    below, above = _errors(rows)
    assert (below[0], above[0]) == (1.0, 1.5) and math.isnan(below[1]) and math.isnan(above[1])
    exp = load_experiment(workspace(tmp_path, SHAPES.replace("values: [1, 2, 3]", "values: [3, 1, 2]")))
    summary = summarise(exp, [{"point": p.id, "m": float(i)} for i, p in enumerate(exp.points)])
    made = plots(exp, summary, {}, str(tmp_path / "plots"))
    assert made == {"m": ["m.png"]} and (tmp_path / "plots" / "m.png").stat().st_size > 1000


def test_intervals_that_end_on_the_line_are_not_shown_rather_than_invalid(tmp_path):
    """An interval that ends on 0 (integer data) or sits on it (identical seeds) does not lie
    below 0: not shown, never "goes the other way"."""
    exp = load_experiment(workspace(tmp_path, SHAPES.replace("values: [1, 2, 3]", "values: [1, 2, 3, 4]")
                                    .split("references:")[0] + "expect:\n"
                                    "  - {measure: m, trend: increasing, over: P, where: {scenario: simple}}\n"
                                    "  - {measure: m, order: [bounded, simple], where: {P: 1}}\n"))
    ints = {"simple.P=1": [5.0, 5.0, 5.0], "simple.P=2": [3.0, 4.0, 4.0], "simple.P=3": [3.0, 5.0, 5.0],
            "simple.P=4": [4.0, 3.0, 4.0], "bounded.P=1": [5.0, 5.0, 5.0]}
    trend, order = judge(exp, ints).values()
    assert trend["verdict"] == "not shown", trend
    assert order["verdict"] == "not shown" and "contains 0" in order["reason"], order  # 5 = 5 exactly
    flat_step = {"simple.P=1": [5.0] * 3, "simple.P=2": [5.0] * 3, "simple.P=3": [6.0] * 3, "simple.P=4": [7.0] * 3}
    assert judge(exp, dict(ints, **flat_step)).all[0]["verdict"] == "not shown"


def test_awkward_values_never_crash_a_verdict(tmp_path):
    exp = load_experiment(workspace(tmp_path, SHAPES))
    zero_mean = [-0.1, 0.7, -0.7, 0.1, 0.1, 0.3, -0.1, -0.1, -0.2]  # 0 to numpy, 3e-18 to Python's sum
    huge = {k: [v * 1e300, v * 1.0000001e300, v * 0.9999999e300] for k, v in MEANS.items()}
    for values in (dict(MEANS, **{"bounded.P=3": zero_mean}), huge,
                   dict(MEANS, **{"simple.P=1": [1e-200, 2e-200, 3e-200]})):
        for v in judge(exp, values).values():
            assert v["verdict"] in ("valid", "invalid", "not shown", "unknown")
    q, low, high = stats.ratio([1.0, 2.0], [1e-200, 2e-200])  # mean(b)² underflows: no ZeroDivisionError
    assert (low, high) == (None, None) or low <= q <= high
    x = np.repeat([1e9, 2e9, 4e9, 8e9], 3)
    lam, low, high = stats.exponent_interval(x, 3 + 2 * (x / 1e9) ** -2.5)
    assert lam == pytest.approx(-2.5) and (low is None or low <= -2.5 <= high)


def test_a_factor_of_a_negative_reference_is_refused(tmp_path):
    with pytest.raises(ValidationError) as err:
        load_experiment(workspace(tmp_path, SHAPES.replace("value: 3}", "value: -3}")))
    assert err.value.field == "expect[4].near_reference" and "negative reference" in str(err.value)


def test_a_shape_resting_on_an_unfaithful_run_is_not_shown_unless_accepted(tmp_path):
    """The runs' fidelity (spark_analysis/fidelity.py) enters the verdicts: a shape that read a
    point with an unfaithful run says 'not shown' and keeps what the values alone gave; a shape
    that did not read it keeps its verdict; degraded runs are named but judged."""
    from testbed.experiment.results import judge as judge_rows

    exp = load_experiment(workspace(tmp_path, SHAPES))

    def rows(fidelity):
        return [{"point": p, "run": f"{p}-s{k + 1}", "m": v, "fidelity": fidelity.get((p, k), "faithful")}
                for p, mean in MEANS.items() for k, v in enumerate(seeds(mean))]

    clean = {s["name"]: s for s in judge_rows(exp, rows({}))}
    assert all(s["verdict"] == "valid" and s["fidelity"]["unfaithful"] == [] for s in clean.values())
    bad = rows({("bounded.P=2", 1): "unfaithful", ("simple.P=1", 0): "degraded"})
    got = {s["name"]: s for s in judge_rows(exp, bad)}
    order = got["m: bounded < simple"]
    assert order["verdict"] == "not shown" and order["judged"] == "valid"
    assert order["reason"].startswith("unfaithful runs at bounded.P=2: the machine did not keep up")
    assert order["fidelity"] == {"unfaithful": ["bounded.P=2"], "degraded": ["simple.P=1"], "accepted": False}
    # per group too: only the group that read the unfaithful point is not shown, keeping its judgement
    assert [(g["group"], g["verdict"], g.get("judged")) for g in order["groups"]] == [
        ("P=1", "valid", None), ("P=2", "not shown", "valid"), ("P=3", "valid", None)]
    trend = next(s for s in judge_rows(exp, bad) if s["kind"] == "trend" and len(s["groups"]) == 2)
    assert {g["group"]: g["verdict"] for g in trend["groups"]} == {"scenario=simple": "valid",
                                                                   "scenario=bounded": "not shown"}
    only_simple = next(s for name, s in got.items() if "simple" in str(s.get("fidelity")) and name != order["name"]
                       and "bounded.P=2" not in s["fidelity"]["unfaithful"])
    assert only_simple["verdict"] == "valid", "a shape that never read the unfaithful point keeps its verdict"
    ratio = next(s for name, s in got.items() if "/" in name)
    assert ratio["verdict"] == "valid" and ratio["fidelity"]["unfaithful"] == []
    exp.accept_unfaithful = True
    accepted = {s["name"]: s for s in judge_rows(exp, bad)}["m: bounded < simple"]
    assert accepted["verdict"] == "valid" and accepted["fidelity"]["accepted"] is True


FIDELITY = ("faithful", "degraded", "unfaithful")


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(means=st.lists(st.sampled_from([1.0, 2.0, 3.0, 6.0, 10.0, 30.0]), min_size=6, max_size=6),
       runs=st.lists(st.sampled_from(FIDELITY), min_size=18, max_size=18),
       missing=st.sets(st.sampled_from(sorted(MEANS)), max_size=2))
def test_fidelity_hides_exactly_the_verdicts_and_groups_that_read_an_unfaithful_point(tmp_path, means, runs, missing):
    """The fidelity rule over generated layouts (any values, so verdicts valid, invalid, not shown
    or unknown; any faithful, degraded or unfaithful run at any seed of any point; up to two points
    not run): the fidelity never changes what the values judged (`judged` keeps it), a shape or a
    group is hidden exactly when it judged (valid or invalid) on a point with an unfaithful run, and
    the points that hide a shape or a group, each alone, are those its expect: entry reads (a
    group: those of its label), whatever the other points' fidelity."""
    from testbed.experiment.results import judge as judge_rows

    exp = load_experiment(workspace(tmp_path, SHAPES))
    points = sorted(MEANS)
    values = dict(zip(points, means))

    def judged(fidelity):
        rows = [{"point": p, "run": f"{p}-s{k + 1}", "m": v, "fidelity": fidelity(p, k)}
                for p in points if p not in missing for k, v in enumerate(seeds(values[p]))]
        return judge_rows(exp, rows)

    # which points each shape reads, from the fixture's expect: (the two orders, the trend within
    # `simple`, the ratio and the references at P=3), and which of them a group reads, from its label
    present = {p for p in points if p not in missing}
    expected_reads = [present, present, {p for p in present if p.startswith("simple.")},
                      {"simple.P=3", "bounded.P=3"} & present, {"simple.P=3", "bounded.P=3"} & present]

    def group_points(label, reads):
        if not label:
            return reads
        if label in points:
            return {label}
        key, _, value = label.partition("=")
        return {p for p in reads if (p.split(".")[0] == value if key == "scenario" else p.endswith("." + label))}

    layout = {(p, k): runs[3 * i + k] for i, p in enumerate(points) for k in range(3)}
    clean = judged(lambda p, k: "faithful")
    got = judged(lambda p, k: layout[p, k])
    # what each point alone, all its runs unfaithful, hides: the shapes and groups that read it
    probes = {p: judged(lambda q, k, p=p: "unfaithful" if q == p else "faithful") for p in points if p not in missing}
    unfaithful = {p for (p, _), f in layout.items() if f == "unfaithful" and p not in missing}
    degraded = {p for (p, _), f in layout.items() if f == "degraded" and p not in missing} - unfaithful
    decisive = ("valid", "invalid")
    for i, (c, s) in enumerate(zip(clean, got)):
        reads = {p for p, probe in probes.items() if p in probe[i]["fidelity"]["unfaithful"]}
        assert reads <= expected_reads[i] and (reads == expected_reads[i] or missing), (s["name"], reads)
        assert s["fidelity"] == {"unfaithful": sorted(reads & unfaithful), "degraded": sorted(reads & degraded),
                                 "accepted": False}, s["name"]
        hidden = c["verdict"] in decisive and bool(reads & unfaithful)
        assert (s["verdict"], s.get("judged")) == (("not shown", c["verdict"]) if hidden else (c["verdict"], None))
        assert len(c.get("groups") or []) == len(s.get("groups") or [])
        for j, (cg, g) in enumerate(zip(c.get("groups") or [], s.get("groups") or [])):
            assert cg["group"] == g["group"]
            if cg["verdict"] not in decisive:
                assert g["verdict"] == cg["verdict"] and "judged" not in g, (s["name"], g)
                continue
            group_reads = {p for p, probe in probes.items() if probe[i]["groups"][j]["verdict"] == "not shown"}
            assert group_reads == group_points(g["group"], reads), (s["name"], g["group"], group_reads)
            hide = bool(group_reads & unfaithful)
            assert (g["verdict"], g.get("judged")) == (("not shown", cg["verdict"]) if hide else (cg["verdict"], None))
    exp.accept_unfaithful = True
    assert [(s["verdict"], s.get("groups")) for s in judged(lambda p, k: layout[p, k])] == \
        [(c["verdict"], c.get("groups")) for c in clean]
