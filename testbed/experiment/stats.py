"""The statistics the expected shapes judge with: every interval is a 95% interval over the seeds'
values, every test uses all of them (never the means alone), and the distributions come from
scipy.stats.

- `mean_interval`: a point's mean and its Student t interval.
- `difference`: the Welch interval of the difference of two points' means (unequal variances).
- `ratio`: Fieller's interval of the ratio of two points' means (the delta method's exact form:
  the set of ratios q for which mean(A) − q·mean(B) is not significantly different from 0, with
  Welch–Satterthwaite degrees of freedom); unbounded when mean(B) is not told from 0.
- `slope`: the Theil–Sen slope of y on x over every (x, seed value) pair and Sen's interval for
  it, which is Kendall's rank test of a monotone trend read as a slope.
- `fit_curves`: least-squares fits of the curve families by their corrected Akaike information
  criterion (AICc) and R², over every seed value.

Each returns plain floats; None stands for "cannot be computed" (too few values)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

LEVEL = 0.95


def _t(df: float, level: float = LEVEL) -> float:
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2, df))


def mean_interval(values: Sequence[float], level: float = LEVEL) -> Tuple[Optional[float], Optional[float],
                                                                       Optional[float]]:
    """(mean, low, high): the Student t interval of the mean; the interval is None below 2 values."""
    if not values:
        return None, None, None
    a = np.asarray(values, dtype=float)
    mean = float(a.mean())
    if len(a) < 2:
        return mean, None, None
    with np.errstate(all="ignore"):
        half = _t(len(a) - 1, level) * float(a.std(ddof=1)) / math.sqrt(len(a))
    return mean, mean - half, mean + half


def _moments(values: Sequence[float]) -> Tuple[float, float, int]:
    a = np.asarray(values, dtype=float)
    with np.errstate(all="ignore"):  # values near the float's limits overflow to inf, judged "across"
        return float(a.mean()), float(a.var(ddof=1)) / len(a), len(a)


def _welch_df(parts: List[Tuple[float, int]]) -> float:
    """Welch–Satterthwaite degrees of freedom of a sum of independent variance terms (v, n)."""
    total = sum(v for v, _ in parts)
    denominator = sum(v * v / (n - 1) for v, n in parts if v > 0)
    return total * total / denominator if denominator > 0 else math.inf


def _df(parts: List[Tuple[float, int]]) -> float:
    """Welch–Satterthwaite's degrees of freedom, or Hsu's min(n) − 1 when a side has two values:
    with two seeds and unequal spreads Welch's interval covers only about 90 %."""
    if min(n for _, n in parts) <= 2:
        return float(min(n for _, n in parts) - 1)
    return _welch_df(parts)


def difference(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> Optional[Tuple[float, float, float]]:
    """(mean(b) − mean(a), low, high): Welch's interval (Hsu's degrees of freedom with two
    values a side); None unless each side has 2 values."""
    if len(a) < 2 or len(b) < 2:
        return None
    ma, va, na = _moments(a)
    mb, vb, nb = _moments(b)
    d = mb - ma
    if va + vb == 0:
        return d, d, d
    half = _t(_df([(va, na), (vb, nb)]), level) * math.sqrt(va + vb)
    return d, d - half, d + half


def ratio(a: Sequence[float], b: Sequence[float], level: float = LEVEL
          ) -> Optional[Tuple[float, Optional[float], Optional[float]]]:
    """(mean(a) / mean(b), low, high): Fieller's interval, with low and high None when it is
    unbounded (mean(b) not told from 0); None unless each side has 2 values and mean(b) ≠ 0."""
    if len(a) < 2 or len(b) < 2:
        return None
    ma, va, na = _moments(a)
    mb, vb, nb = _moments(b)
    if mb == 0:
        return None
    q = ma / mb
    if va + vb == 0:
        return q, q, q
    t = _t(_df([(va, na), (q * q * vb, nb)]), level)
    if t * t * vb >= mb * mb:  # g ≥ 1: mean(b) not told from 0 (compared so, as mb² may underflow)
        return q, None, None
    g = t * t * vb / (mb * mb)
    half = t / abs(mb) * math.sqrt(va * (1 - g) + q * q * vb)
    return q, (q - half) / (1 - g), (q + half) / (1 - g)


def slope(xs: Sequence[float], ys: Sequence[float], level: float = LEVEL
          ) -> Optional[Tuple[float, Optional[float], Optional[float]]]:
    """(Theil–Sen slope, low, high) of y on x over all pairs, with Sen's interval (Sen 1968, eq.
    2.6 for the ties in x; the ties in y counted too, as scipy.stats.theilslopes does, which
    only widens it); low and high None when the sample is too small for the interval
    (its ranks fall outside the slopes: scipy would clip them to the extreme slopes and claim more
    than the data hold). None with fewer than two x values."""
    if len(set(xs)) < 2:
        return None
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if len(set(ys)) == 1:
        return 0.0, 0.0, 0.0
    from scipy.stats import norm

    dx = x[:, None] - x
    dy = y[:, None] - y
    slopes = np.sort(dy[dx > 0] / dx[dx > 0])
    estimate = float(np.median(slopes))

    def ties(a: np.ndarray) -> float:
        _, counts = np.unique(a, return_counts=True)
        return float(sum(k * (k - 1) * (2 * k + 5) for k in counts))

    n, nt = len(y), len(slopes)
    sigma = math.sqrt((n * (n - 1) * (2 * n + 5) - ties(x) - ties(y)) / 18.0)
    z = float(norm.ppf(0.5 + level / 2))
    upper = int(round((nt + z * sigma) / 2.0))
    lower = int(round((nt - z * sigma) / 2.0)) - 1
    if lower < 0 or upper > nt - 1:
        return estimate, None, None
    return estimate, float(slopes[lower]), float(slopes[upper])


# -- curves ------------------------------------------------------------------------------------

#: the Box–Cox exponents searched: y = a + b·(x^λ − 1)/λ, which is a line at λ = 1 and a + b·log x
#: at λ = 0 (its limit); a power of x elsewhere
LAMBDAS = np.round(np.arange(-3.0, 4.0 + 1e-9, 0.01), 2)


def box_cox(x: np.ndarray, lam: float) -> np.ndarray:
    """(x^λ − 1)/λ, log x at λ = 0, on x over its geometric mean: the same curves up to a + b·f
    (so the same least squares), without the loss of precision or the overflow of x^λ for large
    x and strongly negative or large λ."""
    x = x / np.exp(np.mean(np.log(x)))
    return np.log(x) if abs(lam) < 1e-12 else (x ** lam - 1.0) / lam


def _lsq_rows(basis: np.ndarray, y: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least squares of y = a + b·basis[i] for every row i at once: (a, b, rss) arrays."""
    fm = basis.mean(axis=1, keepdims=True)
    ym = y.mean()
    fc = basis - fm
    sff = np.einsum("ij,ij->i", fc, fc)
    sfy = fc @ (y - ym)
    with np.errstate(all="ignore"):
        b = np.where(sff > 0, sfy / sff, 0.0)
        rss = float(np.sum((y - ym) ** 2)) - b * sfy
    a = ym - b * fm[:, 0]
    bad = ~np.isfinite(basis).all(axis=1)
    rss = np.where(bad, np.inf, np.maximum(rss, 0.0))
    return a, b, rss


@dataclass
class Fitted:
    family: str
    words: str
    parameters: int                 # a, b and the shape parameter if any (the error variance aside)
    rss: float
    aicc: float
    r2: float
    a: float
    b: float
    p: Optional[float] = None       # the shape parameter: λ, or the scale s

    def curve(self, x: np.ndarray) -> np.ndarray:
        """The fitted values at the x values it was fitted to (the bases are relative to them:
        their minimum, their geometric mean)."""
        return self.a + self.b * BASES[self.family](np.asarray(x, dtype=float), self.p)


def _span(x: np.ndarray) -> float:
    return float(x.max() - x.min()) or 1.0


#: the families: name -> (the basis f(x; p), in y = a + b·f, and how it reads)
BASES: Dict[str, Callable[[np.ndarray, Optional[float]], np.ndarray]] = {
    "linear": lambda x, p: x,
    "log": lambda x, p: np.log(x),
    "power": lambda x, p: box_cox(x, p),
    "exponential": lambda x, p: np.exp((x - x.min()) / p),
    "saturation": lambda x, p: -np.expm1(-(x - x.min()) / p),
}
WORDS = {"linear": "a + b·x", "log": "a + b·log x", "power": "a + b·(x^λ − 1)/λ",
         "exponential": "a + b·e^(x/s)", "saturation": "a + b·(1 − e^(−x/s))"}


def _aicc(rss: float, n: int, parameters: int) -> float:
    k = parameters + 1  # the error variance is estimated too
    if n - k - 1 <= 0:
        return math.inf
    return n * math.log(max(rss, 1e-300) / n) + 2 * k + 2 * k * (k + 1) / (n - k - 1)


def _family(name: str, x: np.ndarray, y: np.ndarray, grid: Optional[np.ndarray]) -> Fitted:
    tss = float(np.sum((y - y.mean()) ** 2))
    if grid is None:
        a, b, rss = _lsq_rows(BASES[name](x, None)[None, :], y)
        i, p = 0, None
    else:
        with np.errstate(all="ignore"):
            basis = np.vstack([BASES[name](x, q) for q in grid])
        a, b, rss = _lsq_rows(basis, y)
        rss = np.where(np.isfinite(rss), rss, np.inf)
        i = int(np.argmin(rss))
        p = float(grid[i])
    k = 2 + (grid is not None)
    return Fitted(name, WORDS[name], k, float(rss[i]), _aicc(float(rss[i]), len(y), k),
                  1 - float(rss[i]) / tss if tss > 0 else 1.0, float(a[i]), float(b[i]), p)


def fit_curves(xs: Sequence[float], ys: Sequence[float]) -> Dict[str, Fitted]:
    """Every family fitted by least squares to every (x, y): a line, a log, a power of x (Box–Cox,
    λ free), an exponential and a saturation (scale s free), with AICc and R²."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    scales = np.geomspace(_span(x) / 20, _span(x) * 20, 241)
    return {"linear": _family("linear", x, y, None), "log": _family("log", x, y, None),
            "power": _family("power", x, y, LAMBDAS), "exponential": _family("exponential", x, y, scales),
            "saturation": _family("saturation", x, y, scales)}


def exponent_interval(xs: Sequence[float], ys: Sequence[float], level: float = LEVEL
                      ) -> Tuple[float, Optional[float], Optional[float]]:
    """(λ, low, high): the Box–Cox exponent of x that fits y = a + b·(x^λ − 1)/λ best, and its
    profile-likelihood interval (the λ whose residual is within F(1, n − 3) of the best); low or
    high None when the interval runs off the searched range [−3, 4]."""
    from scipy.stats import f as fisher

    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    with np.errstate(all="ignore"):
        basis = np.vstack([box_cox(x, q) for q in LAMBDAS])
    _, _, rss = _lsq_rows(basis, y)
    rss = np.where(np.isfinite(rss), rss, np.inf)
    i = int(np.argmin(rss))
    n = len(y)
    if not np.isfinite(rss[i]):
        return float(LAMBDAS[i]), None, None
    if n <= 3:
        return float(LAMBDAS[i]), None, None
    limit = rss[i] * (1 + float(fisher.ppf(level, 1, n - 3)) / (n - 3))
    inside = np.nonzero(rss <= limit)[0]
    low, high = int(inside.min()), int(inside.max())
    return (float(LAMBDAS[i]), None if low == 0 else float(LAMBDAS[low]),
            None if high == len(LAMBDAS) - 1 else float(LAMBDAS[high]))
