"""The job's request and the measured stability margin as the arm loop receives them, and the
checks a job request must pass before the controller sees it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from humanoid_balance.core.arm_controller import ArmController

__all__ = ["JOB_TWIST_LIMITS", "JOB_VELOCITY_LIMIT_FACTOR", "JobInput", "MeasuredMargin",
           "job_problem"]

#: m/s, rad/s: a job twist faster than these (hand speeds no arm reaches) is refused; the
#: controller scales any plausible one to the joint limits
JOB_TWIST_LIMITS = (10.0, 100.0)
#: a job joint velocity above this many times the joint's speed limit is refused
JOB_VELOCITY_LIMIT_FACTOR = 10.0


@dataclass(frozen=True)
class JobInput:
    """The job's latest request, as received (checked by the loop every cycle).

    Attributes:
        received_s: when it was received [s].
        twist: hand twist ``[v; w]`` [m/s, rad/s], or None.
        frame: the twist's frame (the controller's ``twist_frame`` is expected).
        joint_names: names of ``joint_velocities``.
        joint_velocities: job arm joint velocities [rad/s] (when ``twist`` is None), or None.
    """

    received_s: float
    twist: np.ndarray | None = None
    frame: str = ""
    joint_names: tuple[str, ...] = ()
    joint_velocities: np.ndarray | None = None


@dataclass(frozen=True)
class MeasuredMargin:
    """A measured stability margin [m] (positive inside the support polygon) and when it came [s]."""

    value_m: float
    received_s: float


def job_problem(job: JobInput, controller: ArmController) -> str | None:
    """Why ``job`` cannot be passed to ``controller`` (the job arm then stops), or None.

    A twist must be in the controller's ``twist_frame``, finite and below
    :data:`JOB_TWIST_LIMITS`; joint velocities must name exactly the job arm's joints, be
    finite and below :data:`JOB_VELOCITY_LIMIT_FACTOR` times their speed limits.
    """
    if job.twist is not None:
        return _twist_problem(job, controller.twist_frame)
    velocity = job.joint_velocities
    expected_names = controller.job_names
    if velocity is None or set(job.joint_names) != set(expected_names) or \
            velocity.shape != (len(job.joint_names),):
        return (f"job joint velocities must name exactly {list(expected_names)} with one "
                f"velocity each; got {list(job.joint_names)}: ignored, job arm stopping")
    if not np.all(np.isfinite(velocity)):
        return "job joint velocities have non-finite values: ignored, job arm stopping"
    limits = controller.arm_limits
    speed = dict(zip(limits.names, limits.velocity, strict=True))
    bound = np.array([JOB_VELOCITY_LIMIT_FACTOR * speed[n] for n in job.joint_names])
    if np.any(np.abs(velocity) > bound):
        return (f"job joint velocities above {JOB_VELOCITY_LIMIT_FACTOR:g} times the joints' "
                "speed limits: ignored, job arm stopping")
    return None


def _twist_problem(job: JobInput, expected: str) -> str | None:
    """Why the twist of ``job`` is refused (expected in frame ``expected``), or None."""
    assert job.twist is not None
    if job.frame != expected:
        return (f"job twist in frame {job.frame!r}, expected {expected!r}: ignored, job arm "
                "stopping")
    if job.twist.shape != (6,) or not np.all(np.isfinite(job.twist)):
        return "job twist has non-finite values: ignored, job arm stopping"
    speeds = (float(np.linalg.norm(job.twist[:3])), float(np.linalg.norm(job.twist[3:])))
    if speeds[0] > JOB_TWIST_LIMITS[0] or speeds[1] > JOB_TWIST_LIMITS[1]:
        return (f"job twist of {speeds[0]:.3g} m/s, {speeds[1]:.3g} rad/s is beyond any hand "
                f"speed ({JOB_TWIST_LIMITS[0]:g} m/s, {JOB_TWIST_LIMITS[1]:g} rad/s): "
                "ignored, job arm stopping")
    return None
