"""A URDF robot in MuJoCo with a PD servo on every joint (no ROS).

:class:`MujocoRobotSim` loads a URDF with :class:`mujoco.MjSpec`, optionally
frees its root (a floating base), and gives every revolute joint a stiff PD
servo with velocity feed-forward, ``tau = kp (q_d - q) + kv (qd_d - qd)``,
clipped to the URDF effort limit. It is a MuJoCo ``general`` actuator (``gain
kp, bias [0, -kp, -kv]``, control ``q_d + kv/kp qd_d``), so the damping term is
integrated implicitly (``implicitfast``) and stays stable with light links.

A position command is the servo's goal, not its target: as the trajectory
generator of a real position servo, the target ``q_d`` moves toward the goal
no faster than the joint's URDF velocity limit,

.. math::

    q_d(t + \\Delta t) = q_d(t) + \\mathrm{clip}(g(t) - q_d(t),
                         -\\dot q_{max} \\Delta t, \\dot q_{max} \\Delta t),

where the goal ``g`` moves with the commanded velocity. A command that jumps
(1e300, clipped to the joint limit) so becomes a ramp at the velocity limit,
which the overdamped servo follows without passing the limit (MuJoCo's joint
limits are soft: a step target across the whole range overshot it by
0.06 rad); a command that moves within the limits is followed as before.

A joint with an acceleration limit ``a`` (``acceleration_limits``; none by
default) also closes a jump of its goal within that limit: the target moves
with the goal plus a correction velocity ``c`` that changes by at most
``a dt`` per step and brakes in time to arrive (:math:`|c| \\le \\sqrt{2 a |e|}`
for the gap ``e`` left), as a drive's profile generator does with a set point
that jumps. A gap within ``a dt^2`` (what a command stream that moves within
the limit leaves) is closed in the step, exactly as without the limit. A late
or sparse command stream (free-running on a loaded machine: goal jumps of
0.07 rad, the shoulders' servos at their 150 N m for 5 ms, single-step
contact-CoP spikes) so moves the arm at its acceleration limit instead of
with an impulse.
Subclasses add floors, sensors and contacts (:mod:`humanoid_balance.sim.humanoid`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from humanoid_balance.core.kernels import all_finite, compiled
from humanoid_balance.exceptions import (
    InvalidInputError,
    ModelFileError,
    SimulationError,
    UnknownJointError,
)

#: a name list's indices, lower and upper limits, velocity limits, and whether it names a joint
#: with an acceleration limit (:meth:`MujocoRobotSim._joint_bounds`)
_Bounds = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]
#: the free joint's quaternion (w, x, y, z at qpos[3:7]) as x, y, z, w: one index, a new array
XYZW_OF_WXYZ = np.array([4, 5, 6, 3])


@dataclass(frozen=True)
class ServoGains:
    """PD gains of a joint group: ``kp`` [N m/rad], ``kv`` [N m s/rad], ``armature`` [kg m^2]."""

    kp: float
    kv: float
    armature: float


#: Gains for any joint no prefix matches.
GENERIC_GAINS: tuple[tuple[str, ServoGains], ...] = (("", ServoGains(2000.0, 40.0, 0.01)),)


@dataclass
class JointStateSample:
    """Joint names, positions [rad], velocities [rad/s] and efforts [N m]."""

    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


def gains_for(joint: str, gains: Sequence[tuple[str, ServoGains]]) -> ServoGains:
    """The gains of the first entry whose prefix occurs in the joint name ('' matches all)."""
    for prefix, g in gains:
        if prefix == "" or prefix in joint:
            return g
    raise SimulationError(f"no servo gains match joint {joint!r}")


def load_spec(urdf_path: Path) -> mujoco.MjSpec:
    """Load a URDF into an editable MuJoCo spec.

    Raises:
        ModelFileError: the file does not exist or MuJoCo cannot load it.
    """
    if not urdf_path.is_file():
        raise ModelFileError(str(urdf_path), "no such file")
    try:
        return mujoco.MjSpec.from_file(str(urdf_path))
    except ValueError as exc:
        raise ModelFileError(str(urdf_path), f"MuJoCo cannot load it ({exc})") from exc


def _urdf_velocity_limits(urdf_path: Path, joints: Sequence[str]) -> np.ndarray:
    """The ``<limit velocity>`` of each joint [rad/s] (inf where the URDF gives none)."""
    import xml.etree.ElementTree as ET

    limits: dict[str, float] = {}
    for joint in ET.parse(urdf_path).getroot().iter("joint"):
        limit = joint.find("limit")
        value = limit.get("velocity") if limit is not None else None
        if value is not None and float(value) > 0:
            limits[str(joint.get("name"))] = float(value)
    return np.array([limits.get(n, np.inf) for n in joints])


@compiled
def _toward_goal(goal: np.ndarray, target: np.ndarray, max_move: np.ndarray) -> None:
    """The targets one step on toward their goals, in place: at most ``max_move`` [rad] (the
    velocity limit times the step), exactly the goal once within reach (an infinite limit:
    always)."""
    for i in range(goal.shape[0]):
        gap = goal[i] - target[i]
        if abs(gap) <= max_move[i]:
            target[i] = goal[i]
        else:
            target[i] = target[i] + min(max(gap, -max_move[i]), max_move[i])


@compiled
def _limited_targets(goal_was: np.ndarray, goal: np.ndarray, target: np.ndarray,
                     target_u: np.ndarray, limited: np.ndarray, change: np.ndarray,
                     step: np.ndarray, limited_max_move: np.ndarray, max_move: np.ndarray,
                     dt: float) -> bool:
    """Move the targets one step (in place), the acceleration-limited joints' within their limit.

    Returns:
        True when every limited joint's target is back on its goal, moving with it:
        until the next command (or brake) they follow it as joints without a limit do.

    A joint without a limit moves to its goal at most at its velocity limit (as
    without limits). A limited one moves with its goal's velocity plus a correction
    ``c`` of the gap ``e`` the goal left at the step's start: ``c`` changes from the
    target's last correction by at most ``a dt``, is at most the speed it can brake
    from in time (``n a dt`` with :math:`a dt^2 n (n + 1) / 2 \\le |e|`,
    :math:`\\approx \\sqrt{2 a |e|}`) and at most ``|e| / dt``; a gap within ``a dt^2``
    that a correction change within ``a dt`` closes is closed in the step (what a
    command stream within the limits leaves, every step: then no correction is
    computed). Every move is at most the velocity limit.
    """
    t0s = np.empty(limited.shape[0])
    for k in range(limited.shape[0]):
        t0s[k] = target[limited[k]]
    _toward_goal(goal, target, max_move)
    all_reached = True
    for k in range(limited.shape[0]):
        i = limited[k]
        g0, g1, t0 = goal_was[i], goal[i], t0s[k]
        goal_step = g1 - g0
        e = g0 - t0
        c_was = target_u[i] - goal_step / dt
        size = abs(e)
        # a gap that a correction change within a dt closes in the step: closed
        closing = size <= step[k] and abs(e / dt - c_was) <= change[k]
        if closing:
            move = g1 - t0
        else:
            # braking by a dt a step from c = n a dt covers a dt^2 n (n + 1) / 2: the largest n
            brake = 0.5 * (math.sqrt(1.0 + 8.0 * size / step[k]) - 1.0) * step[k] / dt
            sign = 1.0 if e > 0.0 else (-1.0 if e < 0.0 else 0.0)
            c = min(max(sign * min(size / dt, brake), c_was - change[k]), c_was + change[k])
            move = goal_step + c * dt
        limit = limited_max_move[k]
        reached = abs(move) <= limit and closing
        new = g1 if reached else t0 + min(max(move, -limit), limit)
        target[i] = new
        target_u[i] = (new - t0) / dt
        all_reached = all_reached and reached
    return all_reached


@compiled
def _servo_controls(target: np.ndarray, target_qd: np.ndarray, target_u: np.ndarray,
                    kv_over_kp: np.ndarray, limited: np.ndarray, ramping: bool,
                    ctrl: np.ndarray) -> None:
    """The position servos' controls: ``target + kv / kp qd`` (the velocity feed-forward: the
    command's, or while ramping the limited joints' target velocity)."""
    for i in range(target.shape[0]):
        ctrl[i] = target[i] + kv_over_kp[i] * target_qd[i]
    if ramping:
        for k in range(limited.shape[0]):
            i = limited[k]
            ctrl[i] = target[i] + kv_over_kp[i] * target_u[i]


@compiled
def _servo_step(goal: np.ndarray, target: np.ndarray, target_qd: np.ndarray,
                target_u: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                max_move: np.ndarray, limited: np.ndarray, change: np.ndarray,
                step: np.ndarray, limited_max_move: np.ndarray, kv_over_kp: np.ndarray,
                ctrl: np.ndarray, dt: float, ramping: bool) -> bool:
    """The servo targets one step on, in place (see :class:`MujocoRobotSim`): a goal with a
    velocity moves with it (within the joint's range), the targets toward their goals (the
    acceleration-limited ones within their limit while ``ramping``), then the controls.
    Returns whether the ramp goes on."""
    goal_was = goal.copy() if ramping else goal  # (only the ramp reads the goal's last step)
    for i in range(goal.shape[0]):
        if target_qd[i] != 0.0:
            goal[i] = min(max(goal[i] + target_qd[i] * dt, lower[i]), upper[i])
    if ramping:
        ramping = not _limited_targets(goal_was, goal, target, target_u, limited, change, step,
                                       limited_max_move, max_move, dt)
    else:
        for i in range(goal.shape[0]):
            if goal[i] != target[i]:
                _toward_goal(goal, target, max_move)
                break
    _servo_controls(target, target_qd, target_u, kv_over_kp, limited, ramping, ctrl)
    return ramping


#: The largest ``r dt`` :class:`MujocoRobotSim` takes with ``rk4``, for the servos' fastest
#: damping rate ``r`` (RK4 is stable up to 2.785 on the real axis; the rest is margin).
RK4_STEP_BOUND = 2.5
#: MuJoCo's integrators by the name :class:`MujocoRobotSim` takes.
INTEGRATORS = {"implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
               "rk4": mujoco.mjtIntegrator.mjINT_RK4}


class MujocoRobotSim:
    """A URDF robot with servoed joints.

    Args:
        urdf_path: the robot's URDF.
        floating_base: free the URDF root (a MuJoCo free joint named ``root``).
        timestep: physics step in [s].
        gravity: magnitude of gravity along -z in [m/s^2].
        joint_friction: Coulomb friction (MuJoCo ``frictionloss``) of every joint in [N m].
        joint_position_noise: standard deviation of the encoder noise in [rad].
        seed: seed of the noise generator.
        gains: servo gains by joint-name prefix (first match wins).
        acceleration_limits: acceleration limit [rad/s^2] (> 0) by joint name for the
            servo's target (see the module docstring); joints not named have none.
        integrator: MuJoCo's integrator, a key of :data:`INTEGRATORS`. ``implicitfast``
            (the default) is first order and stable with light links at 1 ms; ``rk4`` is
            fourth order, for runs whose figures must not depend on the step (the strike
            experiment: at 1 ms ``implicitfast`` doubled its ZMP peak in the wait, README),
            and needs a step short against the servos' damping (0.25 ms here).
    """

    def __init__(self, urdf_path: str | Path, *, floating_base: bool = False,
                 timestep: float = 0.001, gravity: float = 9.81, joint_friction: float = 0.0,
                 joint_position_noise: float = 0.0, seed: int = 0,
                 gains: Sequence[tuple[str, ServoGains]] = GENERIC_GAINS,
                 acceleration_limits: Mapping[str, float] | None = None,
                 integrator: str = "implicitfast") -> None:
        if integrator not in INTEGRATORS:
            raise InvalidInputError(
                f"integrator={integrator!r}: expected one of {sorted(INTEGRATORS)}")
        checks = (("timestep", timestep, 1e-5), ("joint_friction", joint_friction, 0.0),
                  ("gravity", gravity, 0.0), ("joint_position_noise", joint_position_noise, 0.0))
        for name, value, low in checks:
            if not np.isfinite(value) or value < low:
                raise InvalidInputError(f"{name}={value} must be finite and >= {low}")
        self.urdf_path = Path(urdf_path)
        self.floating_base = floating_base
        self.joint_position_noise = joint_position_noise
        self._rng = np.random.default_rng(seed)
        self._gains = tuple(gains)
        self.integrator = integrator
        spec = self._servoed_spec(timestep, gravity, joint_friction)
        self._customize(spec)
        try:
            self.model = spec.compile()
        except ValueError as exc:
            raise SimulationError(f"MuJoCo cannot compile {self.urdf_path.name}: {exc}") from exc
        self.spec = spec
        self.data = mujoco.MjData(self.model)
        self._index_joints()
        self._bounds_cache: dict[tuple[str, ...], _Bounds] = {}
        if acceleration_limits:
            self.set_acceleration_limits(acceleration_limits)
        self.total_mass = float(np.sum(self.model.body_mass))
        self._after_compile()
        self.reset()
        if integrator == "rk4":
            self._check_rk4_step()
        # the step's kernel compiled (or loaded from numba's cache) now, on copies, not in a step
        _servo_step(self._goal_q.copy(), self._target_q.copy(), self._target_qd.copy(),
                    self._target_u.copy(), self._lower, self._upper, self._max_move,
                    self._limited_idx, self._limited_change, self._limited_step,
                    self._limited_max_move, self._kv_over_kp, self.data.ctrl.copy(),
                    self.timestep, True)

    def _servoed_spec(self, timestep: float, gravity: float, joint_friction: float) -> mujoco.MjSpec:
        """The URDF's spec with the options, the root freed for a floating base, and a PD
        servo on every revolute joint (sets :attr:`root_body` and :attr:`joint_names`)."""
        spec = load_spec(self.urdf_path)
        spec.option.timestep = timestep
        spec.option.gravity = [0.0, 0.0, -gravity]
        spec.option.integrator = INTEGRATORS[self.integrator]
        roots = [b for b in spec.bodies if b.parent is not None and b.parent.name == "world"]
        if len(roots) != 1:
            raise ModelFileError(str(self.urdf_path), f"expected one root link, found {len(roots)}")
        self.root_body: str = roots[0].name
        if self.floating_base:
            roots[0].add_freejoint(name="root")
        hinges = [j for j in spec.joints if j.type == mujoco.mjtJoint.mjJNT_HINGE]
        self.joint_names: tuple[str, ...] = tuple(j.name for j in hinges)
        for joint in hinges:
            g = gains_for(joint.name, self._gains)
            joint.armature = g.armature
            joint.frictionloss = joint_friction
            effort = float(joint.actfrcrange[1]) if joint.actfrclimited else 0.0
            act = spec.add_actuator(name=f"{joint.name}_servo", target=joint.name,
                                    trntype=mujoco.mjtTrn.mjTRN_JOINT)
            act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
            act.gainprm[0] = g.kp
            act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
            act.biasprm[0:3] = [0.0, -g.kp, -g.kv]
            if effort > 0:
                act.forcelimited = True
                act.forcerange = [-effort, effort]
        return spec

    def _index_joints(self) -> None:
        """The joints' addresses, servo gains, limits and (zero) servo targets in the model."""
        m = self.model
        n = len(self.joint_names)
        # read once: every step needs it, and the binding's attribute read costs as much as a
        # numpy call (the timestep is the spec's, fixed here)
        self._timestep = float(m.opt.timestep)
        jid = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in self.joint_names])
        self._qadr = m.jnt_qposadr[jid]
        self._dadr = m.jnt_dofadr[jid]
        servo = [gains_for(j, self._gains) for j in self.joint_names]
        #: each joint's servo damping [N m s/rad] and its ratio to the stiffness [s]
        self._kv = np.array([g.kv for g in servo])
        self._kv_over_kp = self._kv / np.array([g.kp for g in servo])
        self._index = {j: i for i, j in enumerate(self.joint_names)}
        limited = m.jnt_limited[jid].astype(bool)
        self._lower = np.where(limited, m.jnt_range[jid, 0], -np.inf)
        self._upper = np.where(limited, m.jnt_range[jid, 1], np.inf)
        #: the URDF's velocity limits [rad/s] (the targets' largest step is taken from them here)
        self.velocity_limit_rad_s = _urdf_velocity_limits(self.urdf_path, self.joint_names)
        #: the largest move of a target in a step [rad] (the velocity limit times the step)
        self._max_move = self.velocity_limit_rad_s * self._timestep
        #: the servo targets' acceleration limits [rad/s^2] (inf: none)
        self.acceleration_limit_rad_s2 = np.full(n, np.inf)
        self._limited_idx = np.zeros(0, dtype=int)
        self._limited_change = self._limited_step = self._limited_max_move = np.zeros(0)
        #: a limited joint's target may be off its goal's path (a command or brake came since
        #: the targets last settled on it): the ramp runs until they do
        self._ramping = False
        self._target_q, self._goal_q, self._target_qd = np.zeros(n), np.zeros(n), np.zeros(n)
        #: the target's velocity [rad/s] last step (limited joints: the velocity feed-forward)
        self._target_u = np.zeros(n)

    def _check_rk4_step(self) -> None:
        """Refuse an RK4 step the servos' damping makes unstable.

        RK4 integrates the servos' ``-kv qd`` explicitly: a mode decaying at rate ``r`` [1/s]
        is stable for ``r dt`` up to 2.785 (RK4's bound on the real axis). The fastest rate is
        the largest eigenvalue of ``M^-1 diag(kv)`` (``M``: MuJoCo's joint-space inertia at
        the start pose, armature included); the step must keep ``r dt <= 2.5``, a margin for
        other poses. The default humanoid's is 3865 / s: 0.25 ms is fine, 1 ms is not.

        Raises:
            InvalidInputError: the step is too long for these servos.
        """
        from scipy.linalg import eigh

        m, d = self.model, self.data
        mujoco.mj_forward(m, d)
        inertia = np.zeros((m.nv, m.nv))
        if hasattr(d, "qM"):  # MuJoCo 3: mj_fullM(m, dst, qM)
            mujoco.mj_fullM(m, inertia, d.qM)
        else:  # MuJoCo 4: mj_fullM(m, d, dst)
            mujoco.mj_fullM(m, d, inertia)
        damping = np.zeros(m.nv)
        damping[self._dadr] = self._kv
        rate = float(eigh(np.diag(damping), inertia, eigvals_only=True).max())
        if rate * self._timestep > RK4_STEP_BOUND:
            raise InvalidInputError(
                f"integrator='rk4' with timestep={self._timestep} s: the servos' damping decays "
                f"at up to {rate:.0f} / s, which RK4 integrates stably only with a step up to "
                f"{RK4_STEP_BOUND / rate:.3g} s; take a shorter step or 'implicitfast'")

    # --- hooks for subclasses ---------------------------------------------------

    def _customize(self, spec: mujoco.MjSpec) -> None:
        """Add bodies, geoms, sensors to the spec before it is compiled."""

    def _after_compile(self) -> None:
        """Look up ids in the compiled model."""

    def _place_base(self) -> None:
        """Set the floating base pose after a reset (default: the origin)."""

    # --- state ---------------------------------------------------------------

    @property
    def time(self) -> float:
        """Simulation time in [s]."""
        return float(self.data.time)

    @property
    def timestep(self) -> float:
        """Physics step in [s] (the model's, set at construction)."""
        return self._timestep

    def reset(self, joint_positions: Mapping[str, float] | None = None) -> None:
        """Put the joints at ``joint_positions`` (others at zero), at rest, targets there too."""
        mujoco.mj_resetData(self.model, self.data)
        q = np.zeros(len(self.joint_names))
        if joint_positions:
            q[self._indices(list(joint_positions))] = list(joint_positions.values())
        self.data.qpos[self._qadr] = q
        if self.floating_base:
            self.data.qpos[3:7] = [1.0, 0.0, 0.0, 0.0]
            mujoco.mj_kinematics(self.model, self.data)
            self._place_base()
        self._target_q = q.copy()
        self._goal_q = q.copy()
        self._target_qd = np.zeros_like(q)
        self._target_u = np.zeros_like(q)
        self._ramping = False
        self._apply_targets()
        mujoco.mj_forward(self.model, self.data)

    def settle(self, duration: float = 0.5) -> None:
        """Step with the current targets for ``duration`` [s]."""
        self.step(round(duration / self.timestep))

    def set_acceleration_limits(self, limits: Mapping[str, float]) -> None:
        """Acceleration limits [rad/s^2] of the named joints' servo targets (inf: none).

        Raises:
            UnknownJointError: a name is not a joint of the model (nothing is applied).
            InvalidInputError: a limit is not > 0 (nothing is applied).
        """
        bad = {n: a for n, a in limits.items() if not a > 0}
        if bad:
            raise InvalidInputError(f"acceleration limits {bad} must be > 0 rad/s^2")
        idx = self._indices(list(limits))
        self.acceleration_limit_rad_s2[idx] = [float(a) for a in limits.values()]
        #: the limited joints' indices and their a dt, a dt^2 (the ramp works on these only)
        self._limited_idx = np.flatnonzero(np.isfinite(self.acceleration_limit_rad_s2))
        self._bounds_cache.clear()  # which name lists name a limited joint
        a = self.acceleration_limit_rad_s2[self._limited_idx]
        self._limited_change = a * self.timestep
        self._limited_step = a * self.timestep * self.timestep
        self._limited_max_move = self._max_move[self._limited_idx]

    def _indices(self, names: Sequence[str]) -> np.ndarray:
        try:
            return np.array([self._index[n] for n in names], dtype=int)
        except KeyError:
            missing = [n for n in names if n not in self._index]
            raise UnknownJointError(missing, f"{self.urdf_path.stem} (MuJoCo)",
                                    self.joint_names) from None

    def set_targets(
        self, names: Sequence[str], positions: Sequence[float] | np.ndarray | None = None,
        velocities: Sequence[float] | np.ndarray | None = None, *, age_s: float = 0.0,
    ) -> None:
        """Servo targets by joint name: positions [rad] and/or velocities [rad/s].

        A position is the goal the servo's target moves to at most at the joint's
        velocity limit (see the module docstring). A velocity without a position
        moves the goal along with it (integrated every step). Positions are clipped
        to the joint limits, velocities to the URDF's velocity limits (as the drives
        would).

        Args:
            names: the joints commanded.
            positions: their goals [rad] at the command's time, or None.
            velocities: their velocities [rad/s], or None.
            age_s: how long ago [s] the command was meant to act (>= 0): a position with a
                velocity is taken where that velocity has moved it since, :math:`g = q +
                \\dot q \\, age`, as if the command had been applied at its time (a late
                command then continues its own path instead of pulling the goal back to
                where it was ``age_s`` ago).

        Raises:
            UnknownJointError: a name is not a joint of the model (nothing is applied).
            InvalidInputError: a value is not finite, the lengths differ or ``age_s`` is not
                finite and >= 0 (nothing is applied).
        """
        idx, lower, upper, limit, limited = self._joint_bounds(names)
        if not (math.isfinite(age_s) and age_s >= 0.0):
            raise InvalidInputError(f"age_s={age_s} must be finite and >= 0")
        for label, values in (("positions", positions), ("velocities", velocities)):
            if values is None:
                continue
            arr = np.asarray(values, dtype=float)
            if arr.shape != (len(idx),):
                raise InvalidInputError(f"{label} has {arr.size} values for {len(idx)} joint names")
            if not np.isfinite(arr).all():
                bad = [names[int(i)] for i in np.flatnonzero(~np.isfinite(arr))]
                raise InvalidInputError(f"non-finite {label} for joints {bad}: command ignored")
        # np.minimum(np.maximum()) is np.clip for finite values, at a third of its cost
        qd = None if velocities is None else \
            np.minimum(np.maximum(np.asarray(velocities, dtype=float), -limit), limit)
        if positions is not None:
            goal = np.asarray(positions, dtype=float)
            if qd is not None and age_s > 0.0:
                goal = goal + qd * age_s
            self._goal_q[idx] = np.minimum(np.maximum(goal, lower), upper)
        if qd is not None:
            self._target_qd[idx] = qd
        elif positions is not None:
            self._target_qd[idx] = 0.0
        # only a command to an acceleration-limited joint starts the ramp: the ramp's targets
        # equal the plain path's to a rounding, and a command to other joints arriving at a
        # load-dependent moment (the waist's, on its drives' wall clock) must not switch between them
        self._ramping = self._ramping or limited

    def _joint_bounds(self, names: Sequence[str]) -> _Bounds:
        """Indices, lower and upper limits [rad], velocity limits [rad/s] of ``names``, and
        whether any has an acceleration limit.

        Cached by the names (a publisher sends the same names in every command).
        """
        key = tuple(names)
        bounds = self._bounds_cache.get(key)
        if bounds is None:
            idx = self._indices(key)
            bounds = (idx, self._lower[idx], self._upper[idx], self.velocity_limit_rad_s[idx],
                      bool(np.isin(idx, self._limited_idx).any()))
            if len(self._bounds_cache) < 64:  # a few publishers' name lists
                self._bounds_cache[key] = bounds
        return bounds

    def brake_targets(self, joints: np.ndarray, max_change_rad_s: float) -> None:
        """Bring the commanded velocities of ``joints`` toward rest by at most ``max_change_rad_s``.

        The position targets keep integrating the remaining velocity, so a joint
        braked every step by ``deceleration * timestep`` decelerates at that rate
        and comes to rest where its velocity ran out (no step in the command).

        Args:
            joints: a boolean mask over :attr:`joint_names`, or their indices.
            max_change_rad_s: the largest change of each velocity [rad/s], >= 0.
        """
        if not np.isfinite(max_change_rad_s) or max_change_rad_s < 0:
            raise InvalidInputError(f"max_change_rad_s={max_change_rad_s} must be finite and >= 0")
        qd = self._target_qd[joints]
        self._target_qd[joints] = np.sign(qd) * np.maximum(np.abs(qd) - max_change_rad_s, 0.0)
        self._ramping = bool(self._limited_idx.size)

    def _apply_targets(self) -> None:
        _servo_controls(self._target_q, self._target_qd, self._target_u, self._kv_over_kp,
                        self._limited_idx, self._ramping, self.data.ctrl)

    def step(self, n: int = 1) -> None:
        """Advance the physics ``n`` steps.

        Raises:
            SimulationError: the state became non-finite.
        """
        dt = self.timestep
        model, data = self.model, self.data
        for _ in range(n):
            # the servo targets one step on, in one compiled call (_servo_step)
            self._ramping = _servo_step(
                self._goal_q, self._target_q, self._target_qd, self._target_u, self._lower,
                self._upper, self._max_move, self._limited_idx, self._limited_change,
                self._limited_step, self._limited_max_move, self._kv_over_kp, data.ctrl, dt,
                self._ramping)
            mujoco.mj_step(model, data)
        if not all_finite(data.qpos):
            raise SimulationError(f"the simulation diverged at t = {self.time:.4f} s")

    def joint_state(self) -> JointStateSample:
        """Joint positions (with encoder noise), velocities and servo efforts."""
        position = self.data.qpos[self._qadr]  # an index array: a new array
        if self.joint_position_noise > 0:
            position += self._rng.normal(0.0, self.joint_position_noise, len(self.joint_names))
        return JointStateSample(
            names=self.joint_names,
            position=position,
            velocity=self.data.qvel[self._dadr].copy(),
            effort=self.data.actuator_force.copy(),
        )

    def base_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Floating base position [m] and orientation (x, y, z, w) in the world."""
        if not self.floating_base:
            return np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0])
        return self.data.qpos[0:3].copy(), self.data.qpos[XYZW_OF_WXYZ]

    def com(self) -> np.ndarray:
        """Centre of mass of the whole robot in the world [m]."""
        return self.data.subtree_com[0].copy()
