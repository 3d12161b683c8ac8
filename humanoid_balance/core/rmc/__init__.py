"""Resolved momentum control of a fast job arm by the auxiliary arm (seed 000, Kajita 2003).

The robot's total momentum, with the waist and legs locked, comes from the two
arms only (seed 000, eq. 1):

.. math::

    \\begin{bmatrix} P \\\\ L \\end{bmatrix} =
    \\begin{bmatrix} M_{job} \\\\ H_{job} \\end{bmatrix} \\dot\\theta_{job} +
    \\begin{bmatrix} M_{aux} \\\\ H_{aux} \\end{bmatrix} \\dot\\theta_{aux}
    = A_{job} \\dot\\theta_{job} + A_{aux} \\dot\\theta_{aux}

``A_job`` and ``A_aux`` are the arm columns of pinocchio's centroidal momentum
map (``computeCentroidalMap``), with the angular rows shifted from the centre
of mass ``c`` to the reference point ``p`` (the balance frame ``W``, the
paper's choice, or the CoM): ``H_p = H_G + [c - p]_x M``.

The job arm follows a hand twist ``[v; w]`` (eq. 3) through a damped
(singularity-robust) pseudo-inverse, or joint velocities given directly. The
auxiliary arm cancels the selected momentum rows (eq. 6):

.. math::

    \\dot\\theta_{aux} = -(S A_{aux})^{+} S A_{job} \\dot\\theta_{job}

with ``S`` any subset of the rows ``[Px, Py, Pz, Lx, Ly, Lz]`` (paper, eq. 5:
``Lx, Ly``) and ``^+`` the minimum-norm least-squares pseudo-inverse.

Joint limits (:mod:`humanoid_balance.core.joint_limits`) are enforced every
cycle on both arms; what happens when the exact solution would break one is
described in :class:`RmcController`. The balance indicators of section 3.2
(ZMP shift, lift-off, sliding and turning margins) come from the rates of the
momentum about ``W`` (:func:`balance_indicators`).

One concept per module:

* :mod:`~humanoid_balance.core.rmc.momentum`: the rows, ``S`` and ``A_job``, ``A_aux`` (eqs. 1, 5);
* :mod:`~humanoid_balance.core.rmc.solvers`: the damped, minimum-norm and bounded solves;
* :mod:`~humanoid_balance.core.rmc.posture`: the aux arm's ready posture task;
* :mod:`~humanoid_balance.core.rmc.cycle`: a cycle's input, output and regime;
* :mod:`~humanoid_balance.core.rmc.controller`: :class:`RmcController` (steps 1-5);
* :mod:`~humanoid_balance.core.rmc.held_rows`: eq. 6 and its bounded forms;
* :mod:`~humanoid_balance.core.rmc.limit_step`: step 4, the regimes;
* :mod:`~humanoid_balance.core.rmc.lookahead`: braking along the path, its curvature;
* :mod:`~humanoid_balance.core.rmc.scale_program`: the job scale's two-variable program;
* :mod:`~humanoid_balance.core.rmc.zonotope`: the aux box's image through the held rows;
* :mod:`~humanoid_balance.core.rmc.indicators`, :mod:`~humanoid_balance.core.rmc.polygon`:
  the balance indicators of section 3.2 and the support polygon's margin.
"""

from __future__ import annotations

from humanoid_balance.core.rmc.controller import STOP_TWIST, RmcController
from humanoid_balance.core.rmc.cycle import RmcInput, RmcOutput, RmcRegime
from humanoid_balance.core.rmc.indicators import BalanceIndicators, balance_indicators
from humanoid_balance.core.rmc.limit_step import SCALE_TOLERANCE
from humanoid_balance.core.rmc.lookahead import (
    DRIFT_SHARE,
    NULL_DRIFT_SHARE,
    NULL_SHARE,
    PATH_BRAKING_FLOOR,
)
from humanoid_balance.core.rmc.momentum import (
    ARMS,
    MOMENTUM_ROWS,
    PAPER_SELECTION,
    REFERENCE_POINTS,
    ArmMomentum,
    arm_momentum_matrices,
    selection_matrix,
    selection_rows,
)
from humanoid_balance.core.rmc.polygon import ConvexPolygon
from humanoid_balance.core.rmc.posture import (
    AUX_READY_POSTURE,
    POSTURE_ACCELERATION,
    POSTURE_GAIN,
    POSTURE_SPEED,
)
from humanoid_balance.core.rmc.scale_program import extreme_scale
from humanoid_balance.core.rmc.solvers import (
    RCOND,
    damped_least_squares,
    damping_squared,
    equality_polish,
    minimum_norm_least_squares,
)
from humanoid_balance.core.rmc.zonotope import boundary_preimage, zonotope_halfspaces

__all__ = [
    "ARMS",
    "AUX_READY_POSTURE",
    "DRIFT_SHARE",
    "MOMENTUM_ROWS",
    "NULL_DRIFT_SHARE",
    "NULL_SHARE",
    "PAPER_SELECTION",
    "PATH_BRAKING_FLOOR",
    "POSTURE_ACCELERATION",
    "POSTURE_GAIN",
    "POSTURE_SPEED",
    "RCOND",
    "REFERENCE_POINTS",
    "SCALE_TOLERANCE",
    "STOP_TWIST",
    "ArmMomentum",
    "BalanceIndicators",
    "ConvexPolygon",
    "RmcController",
    "RmcInput",
    "RmcOutput",
    "RmcRegime",
    "arm_momentum_matrices",
    "balance_indicators",
    "boundary_preimage",
    "damped_least_squares",
    "damping_squared",
    "equality_polish",
    "extreme_scale",
    "minimum_norm_least_squares",
    "selection_matrix",
    "selection_rows",
    "zonotope_halfspaces",
]
