"""The 802.11 channel's settings (a radio segment with `channel: wifi`): the standard, the rates
and the propagation, validated before anything is created; and the delivery a pair can expect
from the propagation alone, without interference (the neighbour graph the run records).

On a segment:

    radio:
      air:
        members: [...]
        channel: wifi              # the kernel range medium is `channel: kernel`, the default
        range: 250m                # as on the kernel medium: beyond it nothing arrives, ever
        standard: 802.11b          # 802.11b (default), 802.11g or 802.11a
        data_rate: 11Mbps          # unicast data; default: the standard's fastest
        basic_rate: 1Mbps          # broadcasts, multicasts and control frames; default: its slowest
        loss: {model: log-distance, exponent: 3, sigma: 4, tx_power: 21, sensitivity: -90}
        # or instead of loss:
        propagation: {model: friis, tx_power: 16, sensitivity: -90, fading: nakagami}

`loss` takes the kernel medium's log-distance model unchanged, so that a segment moves from one
channel to the other by its `channel` field: ns-3 computes the same path loss and draws the same
log-normal shadowing per frame and receiver, the transmit power is the PHY's and the sensitivity
is the PHY's reception threshold: ns-3 detects a preamble from it (its own default, -82 dBm,
would cut the reach of a -90 dBm segment about in half) and counts a detected frame as a busy
medium from it, so that carrier sense reaches as far as reception. A frame must also clear the
noise floor by preamble detection's 4 dB (-89.6 dBm at 802.11b's 22 MHz), so a sensitivity below
that is the floor's (`WifiSpec.threshold_dbm`). `propagation` names the other path-loss models ns-3 has
(`range`: every frame in range arrives at full power; `friis`; `two-ray`; `log-distance`), and
`fading: nakagami` adds Nakagami-m fading on top of any of them, as ns-3 chains it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .propagation import LOG_DISTANCE_FIELDS, BOUNDS, LossModel, ModelError

#: standard → (ns-3 WifiStandard enum name, centre frequency in Hz of the channel ns-3 uses,
#: {rate in Mbit/s: ns-3 WifiMode name}, the channel's width in Hz)
STANDARDS: Dict[str, Tuple[str, float, Dict[float, str], float]] = {
    "802.11b": ("WIFI_STANDARD_80211b", 2.412e9,
                {1.0: "DsssRate1Mbps", 2.0: "DsssRate2Mbps", 5.5: "DsssRate5_5Mbps", 11.0: "DsssRate11Mbps"}, 22e6),
    "802.11g": ("WIFI_STANDARD_80211g", 2.412e9,
                {1.0: "DsssRate1Mbps", 2.0: "DsssRate2Mbps", 5.5: "DsssRate5_5Mbps", 11.0: "DsssRate11Mbps",
                 **{r: f"ErpOfdmRate{r:g}Mbps" for r in (6.0, 9.0, 12.0, 18.0, 24.0, 36.0, 48.0, 54.0)}}, 20e6),
    "802.11a": ("WIFI_STANDARD_80211a", 5.18e9,
                {r: f"OfdmRate{r:g}Mbps" for r in (6.0, 9.0, 12.0, 18.0, 24.0, 36.0, 48.0, 54.0)}, 20e6),
}
PROPAGATION_MODELS = ("range", "log-distance", "friis", "two-ray")
FADING_MODELS = ("none", "nakagami")
#: the fields a segment has only on the wifi channel, and those it has only on the kernel one
WIFI_FIELDS = ("standard", "data_rate", "basic_rate", "propagation")
KERNEL_ONLY = {"bitrate": "the wifi channel's airtime comes from data_rate and basic_rate",
               "delay": "the wifi channel's delays are its MAC's (queueing, backoff, retries) and the air's",
               "jitter": "the wifi channel's delays are its MAC's (queueing, backoff, retries) and the air's"}
#: `propagation`'s defaults are ns-3's (`loss` keeps the kernel medium's): transmit power, reception
#: threshold, and log-distance's exponent and loss at 1 m
DEFAULT_TX_POWER_DBM = 16.0
DEFAULT_SENSITIVITY_DBM = -101.0
SPEED_OF_LIGHT = 299_792_458.0
#: what ns-3's PHY adds to the thermal noise (its RxNoiseFigure) and the SNR its threshold
#: preamble detection asks of a frame (its Threshold), in dB: ns-3's defaults, which the channel's
#: process sets from here (testbed/media/channels/ns3_process.py)
NOISE_FIGURE_DB = 7.0
PREAMBLE_SNR_DB = 4.0

PROPAGATION_ALLOWED = ("range; or {model: log-distance, exponent, reference_loss, reference_distance, sigma, "
                       "tx_power, sensitivity}; {model: friis, tx_power, sensitivity}; {model: two-ray, height, "
                       "tx_power, sensitivity}; each with fading: nakagami or {model: nakagami, m: M}")
_COMMON = ("model", "tx_power", "sensitivity", "fading")
_MODEL_FIELDS = {"range": _COMMON, "friis": _COMMON, "two-ray": _COMMON + ("height",),
                 "log-distance": _COMMON + ("exponent", "reference_loss", "reference_distance", "sigma")}


@dataclass(frozen=True)
class Propagation:
    model: str = "range"
    tx_power_dbm: float = DEFAULT_TX_POWER_DBM
    sensitivity_dbm: float = DEFAULT_SENSITIVITY_DBM
    exponent: float = 3.0
    reference_loss_db: float = 46.6777
    reference_distance_m: float = 1.0
    sigma_db: float = 0.0
    height_m: float = 1.5
    fading: str = "none"
    nakagami_m: float = 1.0

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"model": self.model, "tx_power": self.tx_power_dbm, "sensitivity": self.sensitivity_dbm}
        if self.model == "log-distance":
            out.update(exponent=self.exponent, reference_loss=self.reference_loss_db,
                       reference_distance=self.reference_distance_m, sigma=self.sigma_db)
        if self.model == "two-ray":
            out["height"] = self.height_m
        if self.fading != "none":
            out["fading"] = {"model": self.fading, "m": self.nakagami_m}
        return out

    def mean_rx_dbm(self, distance: np.ndarray, frequency_hz: float, z_tx: float = 0.0,
                    z_rx: float = 0.0) -> np.ndarray:
        """The received power in dBm before shadowing and fading, as ns-3's model computes it."""
        d = np.asarray(distance, dtype=np.float64)
        wavelength = SPEED_OF_LIGHT / frequency_hz
        if self.model == "range":
            return np.full_like(d, self.tx_power_dbm)
        if self.model == "log-distance":
            ratio = np.maximum(d, self.reference_distance_m) / self.reference_distance_m
            return self.tx_power_dbm - self.reference_loss_db - 10.0 * self.exponent * np.log10(ratio)
        # ns-3's Friis: no loss below 3 wavelengths, and never a gain
        with np.errstate(divide="ignore"):
            friis = np.where(d <= 3 * wavelength, 0.0, 20.0 * np.log10(4 * math.pi * np.maximum(d, 1e-9) / wavelength))
        friis = np.maximum(friis, 0.0)
        if self.model == "friis":
            return self.tx_power_dbm - friis
        # ns-3's two-ray ground: Friis up to the crossover distance 4π·ht·hr/λ, then 40 log10(d)
        ht, hr = z_tx + self.height_m, z_rx + self.height_m
        crossover = 4 * math.pi * ht * hr / wavelength
        with np.errstate(divide="ignore"):
            ground = 40.0 * np.log10(np.maximum(d, 1e-9)) - 20.0 * math.log10(max(ht * hr, 1e-9))
        return self.tx_power_dbm - np.where(d <= crossover, friis, ground)

    def probability(self, distance: np.ndarray, frequency_hz: float,
                    threshold_dbm: Optional[float] = None) -> np.ndarray:
        """The probability that a frame sent over each distance reaches the receiver's
        threshold (its sensitivity unless given), without interference (shadowing and fading
        drawn per frame)."""
        threshold = self.sensitivity_dbm if threshold_dbm is None else threshold_dbm
        margin = self.mean_rx_dbm(distance, frequency_hz) - threshold
        if self.fading == "none":
            if self.sigma_db == 0:
                return (margin >= 0).astype(np.float64)
            from scipy.special import ndtr

            return ndtr(margin / self.sigma_db)
        from scipy.special import gammaincc

        # Nakagami-m: the received power is Gamma(m, mean/m); P(power >= sensitivity) =
        # Q(m, m·s/mean); shadowing, when there is some, is averaged over by Gauss-Hermite
        nodes, weights = (np.polynomial.hermite_e.hermegauss(24) if self.sigma_db else (np.array([0.0]),
                                                                                        np.array([1.0])))
        weights = weights / weights.sum()
        out = np.zeros_like(np.asarray(margin, dtype=np.float64))
        for x, w in zip(nodes, weights):
            ratio = 10.0 ** (-(margin + self.sigma_db * x) / 10.0)  # sensitivity / mean power
            out += w * gammaincc(self.nakagami_m, self.nakagami_m * ratio)
        return out


@dataclass(frozen=True)
class WifiSpec:
    standard: str = "802.11b"
    data_rate_mbit: float = 11.0
    basic_rate_mbit: float = 1.0
    propagation: Propagation = Propagation()

    @property
    def frequency_hz(self) -> float:
        return STANDARDS[self.standard][1]

    @property
    def threshold_dbm(self) -> float:
        """The weakest frame the PHY receives without interference: the sensitivity, or the
        thermal noise over the channel plus the noise figure and preamble detection's SNR if
        that is higher."""
        floor = -174.0 + 10.0 * math.log10(STANDARDS[self.standard][3]) + NOISE_FIGURE_DB
        return max(self.propagation.sensitivity_dbm, floor + PREAMBLE_SNR_DB)

    def probability(self, distance: np.ndarray) -> np.ndarray:
        """The expected delivery over each distance, from the propagation alone."""
        return self.propagation.probability(distance, self.frequency_hz, self.threshold_dbm)

    def mode(self, rate_mbit: float) -> str:
        return STANDARDS[self.standard][2][rate_mbit]

    def to_dict(self) -> Dict[str, Any]:
        return {"standard": self.standard, "data_rate": f"{self.data_rate_mbit:g}Mbps",
                "basic_rate": f"{self.basic_rate_mbit:g}Mbps", "propagation": self.propagation.to_dict()}

    def manifest(self) -> Dict[str, Any]:
        return {"standard": self.standard, "data_rate_mbit": self.data_rate_mbit,
                "basic_rate_mbit": self.basic_rate_mbit, "frequency_hz": self.frequency_hz,
                "data_mode": self.mode(self.data_rate_mbit), "basic_mode": self.mode(self.basic_rate_mbit),
                "propagation": self.propagation.to_dict()}


def _rates_allowed(standard: str) -> str:
    return f"one of {', '.join(f'{r:g}Mbps' for r in STANDARDS[standard][2])} ({standard}'s rates)"


def _rate(value: Any, key: str, standard: str) -> float:
    from ..units import parse_rate_mbit

    try:
        rate = parse_rate_mbit(value)
    except ValueError as exc:
        raise ModelError((key,), str(exc), _rates_allowed(standard)) from None
    for known in STANDARDS[standard][2]:
        if abs(known - rate) < 1e-9:
            return known
    raise ModelError((key,), f"{value} is not a rate of {standard}", _rates_allowed(standard))


def _number(value: Any, key: Tuple[Any, ...], low: float, high: float, allowed: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError(key, f"expected a number, got {value!r}", allowed)
    number = float(value)
    if not math.isfinite(number) or not low <= number <= high:
        raise ModelError(key, f"{value} is out of range", allowed)
    return number


def _fading(value: Any) -> Tuple[str, float]:
    allowed = "none, nakagami, or {model: nakagami, m: M} with M from 0.5 to 20 (1: Rayleigh)"
    if value is None or value == "none":
        return "none", 1.0
    if value == "nakagami":
        return "nakagami", 1.0
    if not isinstance(value, dict) or value.get("model") not in FADING_MODELS:
        raise ModelError(("fading",), f"unknown fading {value!r}", allowed)
    for key in value:
        if key not in ("model", "m"):
            raise ModelError(("fading", key), f"unknown field '{key}'", "model, m")
    if value["model"] == "none":
        return "none", 1.0
    m = _number(value.get("m", 1.0), ("fading", "m"), 0.5, 20.0, allowed)
    return "nakagami", m


def parse_propagation(value: Any) -> Propagation:
    """A wifi segment's `propagation:` → Propagation (ModelError with the key below it)."""
    from ..units import parse_distance_m

    if value == "range" or value is None:
        return Propagation()
    if isinstance(value, str):
        if value in PROPAGATION_MODELS:
            return Propagation(model=value)
        raise ModelError((), f"unknown propagation model {value!r}", PROPAGATION_ALLOWED)
    if not isinstance(value, dict):
        raise ModelError((), "expected a propagation model", PROPAGATION_ALLOWED)
    model = value.get("model")
    if model not in PROPAGATION_MODELS:
        raise ModelError(("model",), f"unknown propagation model {model!r}", ", ".join(PROPAGATION_MODELS))
    fields: Dict[str, Any] = {"model": model}
    for key, item in value.items():
        if key not in _MODEL_FIELDS[model]:
            raise ModelError((key,), f"unknown field '{key}' for {model}", ", ".join(_MODEL_FIELDS[model]))
        if key == "model":
            continue
        if key == "fading":
            fields["fading"], fields["nakagami_m"] = _fading(item)
        elif key == "height":
            fields["height_m"] = _number(item, (key,), 0.0, 1e4, "the antennas' height in metres above the "
                                                                 "nodes' z, 0 to 10000")
        elif key == "reference_distance":
            try:
                fields["reference_distance_m"] = parse_distance_m(item)
            except ValueError as exc:
                raise ModelError((key,), str(exc), LOG_DISTANCE_FIELDS[key][2]) from None
            if fields["reference_distance_m"] <= 0:
                raise ModelError((key,), f"{item} is not above 0", LOG_DISTANCE_FIELDS[key][2])
        else:
            attr, _, allowed = LOG_DISTANCE_FIELDS[key]
            low, high = BOUNDS[key]
            fields[attr] = _number(item, (key,), low, high, allowed)
    return Propagation(**fields)


def from_loss(loss: LossModel) -> Optional[Propagation]:
    """The kernel medium's loss model as the wifi channel's propagation (None: it has none)."""
    if loss.model == "none":
        return None
    return Propagation(model="log-distance", tx_power_dbm=loss.tx_power_dbm, sensitivity_dbm=loss.sensitivity_dbm,
                       exponent=loss.exponent, reference_loss_db=loss.reference_loss_db,
                       reference_distance_m=loss.reference_distance_m, sigma_db=loss.sigma_db)


def parse_wifi(fields: Dict[str, Any], loss: LossModel) -> WifiSpec:
    """A segment's wifi fields (and its `loss`, already parsed) → WifiSpec (ModelError with the key)."""
    for key, why in KERNEL_ONLY.items():
        if key in fields:
            raise ModelError((key,), f"'{key}' is a setting of the kernel channel, not of channel: wifi ({why})",
                             f"channel: kernel with {key}, or channel: wifi without it")
    standard = fields.get("standard", "802.11b")
    if standard not in STANDARDS:
        raise ModelError(("standard",), f"unknown standard {standard!r}", ", ".join(STANDARDS))
    rates = sorted(STANDARDS[standard][2])
    data = _rate(fields["data_rate"], "data_rate", standard) if "data_rate" in fields else rates[-1]
    basic = _rate(fields["basic_rate"], "basic_rate", standard) if "basic_rate" in fields else rates[0]
    if "propagation" in fields and loss.model != "none":
        raise ModelError(("propagation",), "both loss and propagation are set",
                         "one of them: loss (the kernel medium's log-distance model) or propagation")
    if loss.model == "table":
        raise ModelError(("loss",), "the wifi channel cannot draw from a table of delivery probabilities",
                         "loss: {model: log-distance, ...} or propagation: " + PROPAGATION_ALLOWED)
    try:
        propagation = from_loss(loss) or parse_propagation(fields.get("propagation"))
    except ModelError as exc:
        raise ModelError(("propagation",) + exc.key, exc.message, exc.allowed) from None
    return WifiSpec(standard=standard, data_rate_mbit=data, basic_rate_mbit=basic, propagation=propagation)


def check_fields(channel: str, fields: Dict[str, Any]) -> None:
    """A kernel segment with wifi fields is refused (a forgotten `channel: wifi`)."""
    if channel == "kernel":
        for key in WIFI_FIELDS:
            if key in fields:
                raise ModelError((key,), f"'{key}' is a setting of channel: wifi, and this segment's channel "
                                         f"is the kernel range medium", "channel: wifi to use it, or remove it")
