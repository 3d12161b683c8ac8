"""The identification experiment's results as RESULTS.md metrics and as Markdown tables.

:func:`identification_metrics` gives the metrics of ``identification_moon.json``,
:func:`identification_markdown` the tables of ``identification_moon.md`` (beside
the paper's), :func:`missed_targets` what misses the 2 % target.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from humanoid_balance.experiments.identification import (
    PAPER_TABLE4,
    IdentificationCase,
    IdentificationResults,
    StaticConfigurations,
)
from humanoid_balance.results import metric
from humanoid_balance.sim.lunar_arm import PAPER_TABLE4_MAX_TORQUE_N_M

Metrics = dict[str, dict[str, Any]]


def _pct_metrics(prefix: str, pct: np.ndarray, target: float | None = None) -> Metrics:
    return {f"{prefix}joint{j + 1}": metric(round(float(pct[j]), 3), "%", target=target,
                                            better="lower") for j in range(6)}


def _mean_pct(pct: np.ndarray) -> float:
    return round(float(np.mean(pct)), 3)


def _method_max_metrics(prefix: str, case: IdentificationCase) -> Metrics:
    return {f"{prefix}max_{m}": metric(round(float(np.max(pct)), 3), "%",
                                       target=case.spec.target_pct, better="lower")
            for m, pct in case.validation.pct_methods.items()}


def _max_torque_metrics(tag: str, case: IdentificationCase) -> Metrics:
    """The peak noise-free torque per joint along the validation path and over random
    configurations [N mm]."""
    out = {}
    for name, values in (("max_torque_n_mm_", case.validation.max_torque_n_m),
                         ("peak_torque_n_mm_", case.peak_torque_n_m)):
        out.update({f"{name}{tag}joint{j + 1}": metric(round(float(values[j]) * 1e3, 2), "N mm")
                    for j in range(6)})
    return out


def _case_metrics(prefix: str, tag: str, case: IdentificationCase) -> Metrics:
    """Headline RMSE per joint, mean and max, per method, and against the measured torque."""
    val = case.validation
    target = case.spec.target_pct
    return {
        **_pct_metrics(prefix, val.pct_paired, target),
        f"{prefix}mean": metric(_mean_pct(val.pct_paired), "%", target=target, better="lower"),
        f"{prefix}max": metric(round(float(np.max(val.pct_paired)), 3), "%", target=target,
                               better="lower"),
        **_method_max_metrics(prefix, case),
        **_pct_metrics(f"rmse_pct_measured_{tag}", val.pct_measured),
        **_pct_metrics(f"rmse_pct_measured_true_model_{tag}", val.pct_measured_floor),
        **_max_torque_metrics(tag, case),
    }


def _settings_metrics(results: IdentificationResults) -> Metrics:
    s = results.settings
    return {"payload_kg": metric(s.payload_kg, "kg"),
            **{f"payload_com_{axis}_m": metric(v, "m") for axis, v in zip("xyz", s.payload_com_m,
                                                                       strict=True)},
            "target_gravity_m_s2": metric(s.target_gravity, "m/s^2"),
            "seed": metric(s.seed)}


def _parameter_error_n_mm(estimate: Any, true_values: np.ndarray) -> float:
    """RMS error [N mm] of an estimate's parameters against the true ones."""
    return round(float(np.sqrt(np.mean((estimate.values - true_values) ** 2)) * 1e3), 3)


def identification_metrics(results: IdentificationResults) -> Metrics:
    """Every metric of ``identification_moon.json`` (names of shared RESULTS.md).

    The headline figures (``rmse_pct_*``) are those of the settings' method; ``_max_sequential``
    is eq. 10's. A short run has the payload case's only.
    """
    out = {**_settings_metrics(results),
           **_case_metrics("rmse_pct_payload_", "payload_", results.payload)}
    default, plain = results.not_optimised, results.no_payload
    if default is None or plain is None:
        return out
    scaled, paper = results.payload_scaled_noise, results.paper_payload
    assert scaled is not None and paper is not None
    return {
        **out,
        "rmse_pct_mean_not_optimised": metric(_mean_pct(default.validation.pct_paired), "%",
                                              better="lower"),
        **_pct_metrics("rmse_pct_not_optimised_", default.validation.pct_paired),
        **_case_metrics("rmse_pct_", "", plain),
        "param_error_rms_n_mm_not_optimised": metric(
            _parameter_error_n_mm(default.identification.paired, plain.true_values), "N mm",
            better="lower"),
        "param_error_rms_n_mm_optimised": metric(
            _parameter_error_n_mm(plain.identification.paired, plain.true_values), "N mm",
            better="lower"),
        "rmse_pct_mean_no_friction_pairs": metric(_mean_pct(plain.validation.pct_unpaired), "%",
                                                  better="lower"),
        **_pct_metrics("rmse_pct_no_friction_pairs_", plain.validation.pct_unpaired),
        "rmse_pct_mean_sequential": metric(
            _mean_pct(plain.validation.pct_methods["sequential"]), "%", better="lower"),
        "rmse_pct_mean_no_friction_pairs_sequential": metric(
            _mean_pct(plain.validation.pct_unpaired_sequential), "%", better="lower"),
        "estimate_s": metric(round(plain.identification.estimate_s, 4), "s", better="lower"),
        "identification_samples": metric(int(plain.identification.samples)),
        **_case_metrics("rmse_pct_payload_scaled_noise_", "payload_scaled_noise_", scaled),
        **_case_metrics("rmse_pct_payload_paper_placement_", "payload_paper_placement_", paper),
        **{f"paper_table4_max_torque_n_mm_joint{j + 1}": metric(round(v * 1e3, 2), "N mm")
           for j, v in enumerate(PAPER_TABLE4_MAX_TORQUE_N_M)},
    }


def missed_targets(results: IdentificationResults) -> list[str]:
    """Joints above their case's target (1 % under the sensor's noise, 2 % under the loaded
    arm's, as written in the metrics), and whether the error failed to rise without friction
    pairs; empty: every target met."""
    metrics = identification_metrics(results)
    missed = [f"{k} {v['value']} % (target {v['target']} %)" for k, v in metrics.items()
              if k.startswith("rmse_pct_") and "_joint" in k and v.get("target") is not None
              and v["value"] > v["target"]]
    if "rmse_pct_mean" in metrics and (metrics["rmse_pct_mean_no_friction_pairs"]["value"]
                                       <= metrics["rmse_pct_mean"]["value"]):
        missed.append("without friction pairs the error did not rise")
    return missed


# --- Markdown -----------------------------------------------------------------------


def _statics_table(statics: StaticConfigurations) -> list[str]:
    lines = ["## static configurations (eq. 12, GA-PSO; default = not optimised)\n\n"
             "sweep | default Q | default cond | optimised Q | optimised cond | "
             "clearance mm | static [deg]\n---|---|---|---|---|---|---"]
    for j, (before, after) in enumerate(zip(statics.default, statics.optimised, strict=True)):
        lines.append(f"joint {j + 1} | {before.q_range:.3f} | {before.condition_number:.2f} | "
                     f"{after.q_range:.3f} | {after.condition_number:.2f} | "
                     f"{after.min_clearance * 1e3:.1f} | "
                     f"{np.round(np.degrees(statics.statics[j]), 1).tolist()}")
    return [*lines, ""]


def _parameter_comparison(default: Any, optimised: Any, truth: np.ndarray) -> str:
    """Markdown table of both estimates beside the true values (paper's Table 5 layout)."""
    rows = ["## parameters, not optimised vs optimised static configurations (no payload)\n\n"
            "parameter | true [N mm] | not optimised [N mm] | error | optimised [N mm] | error"
            "\n---|---|---|---|---|---"]
    for name, t, d, o in zip(default.names, truth, default.values, optimised.values, strict=True):
        rows.append(f"{name} | {t * 1e3:.3f} | {d * 1e3:.3f} | {(d - t) * 1e3:+.3f} | "
                    f"{o * 1e3:.3f} | {(o - t) * 1e3:+.3f}")
    return "\n".join(rows) + "\n"


def _case_tables(case: IdentificationCase, method: str,
                 not_optimised: IdentificationCase | None, target_gravity: float) -> list[str]:
    """RMSE per joint beside the paper's, then the estimated parameters beside the true ones."""
    val = case.validation
    statics = "hand-picked" if case.spec.statics is None else "optimised"
    paper = case.paper_pct or ("-",) * 6
    lines = [f"## {case.label} ({statics} static configurations, {method}, validated at "
             f"{target_gravity:g} m/s^2; target {case.spec.target_pct:g} % per joint)\n\njoint | "
             "max torque [N mm] | RMSE % vs G | RMSE % vs measured (paired) | "
             "true model vs measured | RMSE % no friction pairs | RMSE % not optimised | "
             "paper %\n---|---|---|---|---|---|---|---"]
    for j in range(6):
        not_opt = "-" if not_optimised is None else \
            f"{not_optimised.validation.pct_paired[j]:.2f}"
        lines.append(f"{j + 1} | {val.max_torque_n_m[j] * 1e3:.2f} | {val.pct_paired[j]:.2f} | "
                     f"{val.pct_measured[j]:.2f} | {val.pct_measured_floor[j]:.2f} | "
                     f"{val.pct_unpaired[j]:.2f} | {not_opt} | {paper[j]}")
    est = case.identification.paired
    lines.append("\nparameter | estimate [N mm] | std [N mm] | true [N mm]\n---|---|---|---")
    for name, v, s, t in zip(est.names, est.values, est.std, case.true_values, strict=True):
        lines.append(f"{name} | {v * 1e3:.3f} | {s * 1e3:.3f} | {t * 1e3:.3f}")
    return [*lines, ""]


def _text(values: np.ndarray) -> str:
    return ", ".join(f"{v:.4f}" for v in values)


def _estimators_table(results: IdentificationResults) -> list[str]:
    lines = ["## estimators (RMSE % vs G on the validation path, same recordings)\n\n"
             "case | method | joint 1 | 2 | 3 | 4 | 5 | 6 | max\n---|---|---|---|---|---|---|---|---"]
    for case in results.cases():
        for m, pct in case.validation.pct_methods.items():
            lines.append(f"{case.label} | {m} | " + " | ".join(f"{p:.2f}" for p in pct)
                         + f" | {np.max(pct):.2f}")
    lines.append("\nstd of the torque noise [N m], joints 1..6: "
                 + "; ".join(f"{c.label}: {_text(c.identification.noise_std_n_m)}"
                             for c in results.cases()) + "\n")
    return lines


def _table4_placements(results: IdentificationResults) -> list[str]:
    """The payload's placements: their peak torques and RMSE beside Table 4."""
    rows = [c for c in (results.no_payload, results.payload, results.paper_payload)
            if c is not None]
    head = " | ".join(f"{c.label}: peak [N mm] | path max [N mm] | RMSE %" for c in rows)
    lines = [f"## the payload beside Table 4 (at {results.settings.target_gravity:g} m/s^2; peak "
             "over random configurations, max along our validation path)\n\n"
             f"joint | Table 4 max [N mm] | Table 4 RMSE % | {head}\n"
             + "|".join(["---"] * (3 + 3 * len(rows)))]
    for j in range(6):
        cells = " | ".join(f"{c.peak_torque_n_m[j] * 1e3:.2f} | "
                           f"{c.validation.max_torque_n_m[j] * 1e3:.2f} | "
                           f"{c.validation.pct_paired[j]:.2f}" for c in rows)
        lines.append(f"{j + 1} | {PAPER_TABLE4_MAX_TORQUE_N_M[j] * 1e3:.2f} | {PAPER_TABLE4[j]} | "
                     f"{cells}")
    return [*lines, ""]


def identification_markdown(results: IdentificationResults) -> str:
    """The tables of ``identification_moon.md``."""
    method, g = results.settings.method, results.settings.target_gravity
    lines: list[str] = []
    plain, default = results.no_payload, results.not_optimised
    if results.statics is not None:
        lines += _statics_table(results.statics)
    if plain is not None and default is not None:
        lines += [_parameter_comparison(default.identification.paired,
                                        plain.identification.paired, plain.true_values),
                  *_case_tables(plain, method, default, g)]
    for case in (results.payload, results.payload_scaled_noise, results.paper_payload):
        if case is not None:
            lines += _case_tables(case, method, None, g)
    lines += [*_table4_placements(results), *_estimators_table(results)]
    return "\n".join(lines) + "\n"
