"""The arms' momentum matrices and the selection of held rows (seed 000, eqs. 1 and 5).

.. math::

    \\begin{bmatrix} P \\\\ L \\end{bmatrix} =
    A_{job} \\dot\\theta_{job} + A_{aux} \\dot\\theta_{aux}

``A_job`` and ``A_aux`` are the arm columns of pinocchio's centroidal momentum map, with
the angular rows shifted from the centre of mass ``c`` to the reference point ``p``:
``H_p = H_G + [c - p]_x M``. ``S`` picks the rows held at zero (eq. 5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from humanoid_balance.core.model import RobotModel
from humanoid_balance.exceptions import ConfigurationError

__all__ = ["ARMS", "MOMENTUM_ROWS", "PAPER_SELECTION", "REFERENCE_POINTS", "ArmMomentum",
           "arm_groups", "arm_momentum_matrices", "selection_matrix", "selection_rows"]

#: Names of the six momentum rows, in the order of ``[P; L]``.
MOMENTUM_ROWS: tuple[str, ...] = ("Px", "Py", "Pz", "Lx", "Ly", "Lz")
#: The two arms (right first) and their joint groups, for both controllers of ``arm_balance``
#: (groups found by :data:`~humanoid_balance.core.model.HUMANOID_GROUP_PATTERNS`).
ARMS: dict[str, str] = {"right": "right_arm", "left": "left_arm"}
REFERENCE_POINTS = ("W", "com")
#: The paper's selection (seed 000, eq. 5).
PAPER_SELECTION: tuple[str, ...] = ("Lx", "Ly")


def selection_matrix(rows: Sequence[str]) -> np.ndarray:
    """The selection matrix ``S`` (k x 6) picking momentum rows by name (seed 000, eq. 5).

    Args:
        rows: a non-empty subset of :data:`MOMENTUM_ROWS`, e.g. ``("Lx", "Ly")``.

    Raises:
        ConfigurationError: an unknown or repeated row name, or no row.
    """
    names = list(rows)
    unknown = [r for r in names if r not in MOMENTUM_ROWS]
    if unknown or not names or len(set(names)) != len(names):
        raise ConfigurationError(
            f"selection={names}: expected a non-empty subset of {list(MOMENTUM_ROWS)} "
            "without repeats, e.g. ['Lx', 'Ly'] (the paper's choice)")
    ordered = [r for r in MOMENTUM_ROWS if r in names]
    s = np.zeros((len(ordered), 6))
    for i, r in enumerate(ordered):
        s[i, MOMENTUM_ROWS.index(r)] = 1.0
    return s


def selection_rows(rows: Sequence[str]) -> tuple[str, ...]:
    """The selected row names, validated, in :data:`MOMENTUM_ROWS` order."""
    s = selection_matrix(rows)
    return tuple(MOMENTUM_ROWS[int(np.argmax(r))] for r in s)


def arm_groups(job_arm: str) -> tuple[str, str]:
    """The joint groups of the job arm and of the aux arm (the other one).

    Raises:
        ConfigurationError: ``job_arm`` is not ``right`` or ``left``.
    """
    if job_arm not in ARMS:
        raise ConfigurationError(f"job_arm={job_arm!r}: expected 'right' or 'left'")
    aux_arm = "left" if job_arm == "right" else "right"
    return ARMS[job_arm], ARMS[aux_arm]


def check_reference_point(reference_point: str) -> None:
    """Raises :class:`ConfigurationError` unless ``reference_point`` is ``W`` or ``com``."""
    if reference_point not in REFERENCE_POINTS:
        raise ConfigurationError(
            f"reference_point={reference_point!r}: expected one of {list(REFERENCE_POINTS)}")


@dataclass(frozen=True)
class ArmMomentum:
    """The momentum matrix split by arm (seed 000, eq. 1).

    Attributes:
        job: ``A_job`` (6 x n_job): ``[P; L]`` per unit job-arm joint velocity.
        aux: ``A_aux`` (6 x n_aux).
        com: centre of mass of the whole robot [m] in the world.
        point: the point [m] (world) the angular rows refer to.
    """

    job: np.ndarray
    aux: np.ndarray
    com: np.ndarray
    point: np.ndarray


def arm_momentum_matrices(
    model: RobotModel, q: np.ndarray, job_arm: str = "right", reference_point: str = "W",
) -> ArmMomentum:
    """``A_job`` and ``A_aux`` at configuration ``q`` about ``W`` or the CoM (seed 000, eq. 1).

    Uses :meth:`RobotModel.momentum_matrix` (pinocchio's centroidal map, shifted).

    Args:
        model: the humanoid (fixed base, ``world_frame="W"`` recommended).
        q: configuration (model.nq,).
        job_arm: ``right`` or ``left``; the other arm is the auxiliary arm.
        reference_point: ``W`` (angular momentum about the balance frame's
            origin) or ``com`` (about the centre of mass).
    """
    job_group, aux_group = arm_groups(job_arm)
    check_reference_point(reference_point)
    com = model.com(q)
    point = model.frame_transform("W", q)[:3, 3] if reference_point == "W" else com
    a = model.momentum_matrix(q, point)
    return ArmMomentum(a[:, model.group_v_index(job_group)], a[:, model.group_v_index(aux_group)],
                       com, point)
