"""An identification result as a gravity model: torques at any gravity (seed 004's purpose).

The results file the ``identification_executor`` node and ``humanoid-balance
identify`` write (:func:`~humanoid_balance.core.identification.procedure.results_document`)
holds the composite gravity parameters ``phi`` (eq. 8) estimated at the
gravity of the run. Every gravity torque is linear in g, so at another
gravity ``g'`` the torques are

.. math::

    \\tau_G(q) = \\frac{g'}{g} H(q) \\phi

with ``H`` the regressor of the arm the parameters belong to (its URDF and
chain, also in the file). :class:`IdentifiedModel` rebuilds ``H`` and checks
that the file's parameter names are the ones it gives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from humanoid_balance.core.identification import LUNAR_JOINTS
from humanoid_balance.exceptions import InvalidInputError

__all__ = ["IdentifiedModel", "check_gravity"]


def check_gravity(gravity: float, option: str = "--gravity") -> float:
    """``gravity`` [m/s^2] if finite and > 0; else a one-line :class:`InvalidInputError`."""
    if not (math.isfinite(gravity) and gravity > 0.0):
        raise InvalidInputError(f"{option} {gravity}: expected a finite gravity > 0 [m/s^2] "
                                "(Moon 1.635, Mars 3.71, Earth 9.81)")
    return float(gravity)


@dataclass(frozen=True)
class IdentifiedModel:
    """The identified parameters and the regressor that turns them into torques.

    Attributes:
        path: the results file.
        joints: the arm's joints, chain order.
        gravity: gravity the parameters were identified at [m/s^2].
        names: the composite parameters' names.
        values: their values [N m] at ``gravity``.
        regressor: the arm's :class:`~humanoid_balance.core.identification.regressor.GravityRegressor`.
        pset: the composite parameter set (maps the standard regressor to ``H``).
    """

    path: Path
    joints: tuple[str, ...]
    gravity: float
    names: tuple[str, ...]
    values: np.ndarray
    regressor: Any
    pset: Any

    @classmethod
    def from_file(cls, path: Path, urdf: str | None = None) -> IdentifiedModel:
        """Read a results YAML; ``urdf`` overrides the file's (``""``: the lunar arm).

        Raises:
            InvalidInputError: the file is not a results file, or its parameters are not the
                arm's composite parameters (another URDF or chain).
            OSError: the file cannot be read.
        """
        import pinocchio as pin
        import yaml

        from humanoid_balance.core.identification.regressor import (
            GravityRegressor,
            identification_parameters,
        )
        from humanoid_balance.resources import urdf_path

        try:
            doc = yaml.safe_load(Path(path).read_text())
        except yaml.YAMLError as exc:
            raise InvalidInputError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
        names, values, gravity, joints, file_urdf = _fields(path, doc)
        chosen = file_urdf if urdf is None else urdf
        try:
            model = pin.buildModelFromUrdf(chosen or str(urdf_path("lunar_arm")))
        except (ValueError, RuntimeError) as exc:
            raise InvalidInputError(f"URDF {chosen!r}: cannot be read ({exc}); give --urdf, the "
                                    "arm the parameters were identified on") from None
        if tuple(model.names[1:]) != joints:
            raise InvalidInputError(f"{path}: joints {list(joints)} are not the URDF's chain "
                                    f"{list(model.names[1:])}; give --urdf, the arm identified")
        regressor = GravityRegressor(model, gravity)
        pset = identification_parameters(regressor)
        if tuple(pset.names) != names:
            raise InvalidInputError(f"{path}: its {len(names)} parameters are not this arm's "
                                    f"{len(pset.names)} composite parameters (first expected "
                                    f"{pset.names[0]!r}); give --urdf, the arm identified")
        return cls(Path(path), joints, gravity, names, values, regressor, pset)

    def gravity_torques(self, positions: np.ndarray, gravity: float) -> np.ndarray:
        """Gravity torques [N m] (N, n) at ``positions`` [rad] (N, n), at ``gravity`` [m/s^2]."""
        from humanoid_balance.core.identification.procedure import predict

        q = np.atleast_2d(np.asarray(positions, dtype=float))
        if q.shape[1:] != (len(self.joints),) or not np.all(np.isfinite(q)):
            raise InvalidInputError(f"positions of shape {q.shape}: expected finite (N, "
                                    f"{len(self.joints)}) angles [rad] of {list(self.joints)}")
        return predict(self.values, self.regressor, self.pset, q, check_gravity(gravity))


def _fields(path: Path, doc: Any) -> tuple[tuple[str, ...], np.ndarray, float, tuple[str, ...],
                                          str]:
    """names, values, gravity, joints, urdf of a results document (one-line errors)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("parameters"), list):
        raise InvalidInputError(f"{path}: not an identification result (no 'parameters' list); "
                                "give the YAML the identification_executor or `identify --out` "
                                "wrote")
    try:
        names = tuple(str(p["name"]) for p in doc["parameters"])
        values = np.array([float(p["value"]) for p in doc["parameters"]])
        gravity = float(doc["gravity_m_s2"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"{path}: an entry lacks {exc} (parameters need name and value; "
                                "gravity_m_s2 a number)") from None
    if not np.all(np.isfinite(values)):
        raise InvalidInputError(f"{path}: a parameter value is not finite")
    check_gravity(gravity, f"{path}: gravity_m_s2")
    joints: Sequence[str] = doc.get("joints") or list(doc.get("fit_rmse_n_m") or LUNAR_JOINTS)
    return names, values, gravity, tuple(str(j) for j in joints), str(doc.get("urdf") or "")
