"""Static configurations of the identification trajectory (seed 004, eqs. 12-17).

While joint j sweeps, the other joints hold a static configuration chosen to
maximise the excitation of joint j's regressor block (eq. 12):

.. math::

    \\max Q = \\sum_c \\left(\\max_t H_{G,jc}(\\theta(t)) - \\min_t H_{G,jc}(\\theta(t))\\right)
    \\quad \\text{s.t.}\\quad \\theta_{min} \\le \\theta \\le \\theta_{max},\\;
    d(V_a, V_b, t) > \\varepsilon,\\; d(V_a, V_{env}, t) > \\varepsilon

(the paper's range criterion over the columns c of joint j's parameters; the
condition number of the stacked block is reported too). Distances come from
coal through pinocchio's collision tools, between non-adjacent links, the
torso and an environment box (a table). Two solvers of the same objective:

- :func:`ga_pso`: the paper's hybrid (eqs. 13-17): a genetic algorithm with
  adaptive crossover / mutation probabilities seeds a particle swarm;
- :func:`differential_evolution`: scipy's, for comparison.

Both minimise the paper's evaluation ``W = 1 / (1 + Q)`` (eq. 13), with
``W = 1 + violation`` for configurations that break the clearance.
:func:`optimise_static_configurations` runs GA-PSO for every sweep and keeps
its solution only where it beats a default configuration.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import scipy.optimize

from humanoid_balance.core.identification.estimation import condition_number
from humanoid_balance.core.identification.regressor import GravityRegressor, ParameterSet
from humanoid_balance.core.identification.trajectory import MAX_SPEED_RAD_S, Sweep
from humanoid_balance.exceptions import ConfigurationError


class ClearanceChecker:
    """Smallest distance between non-adjacent links, the base and an environment box (coal).

    Args:
        urdf: the arm's URDF (its ``<collision>`` shapes are used).
        model: the pinocchio model built from it.
        environment: boxes ``(name, centre [m], size [m])`` fixed in the world.
    """

    def __init__(self, urdf: str, model: pin.Model,
                 environment: Sequence[tuple[str, Sequence[float], Sequence[float]]] = ()) -> None:
        import coal

        self.model = model
        self.geometry = pin.buildGeomFromUrdf(model, urdf, pin.GeometryType.COLLISION)
        for name, centre, size in environment:
            placement = pin.SE3(np.eye(3), np.asarray(centre, float))
            obj = pin.GeometryObject(name, 0, placement, coal.Box(*[float(s) for s in size]))
            self.geometry.addGeometryObject(obj)
        objects = self.geometry.geometryObjects
        for a in range(len(objects)):
            for b in range(a + 1, len(objects)):
                ja, jb = objects[a].parentJoint, objects[b].parentJoint
                if abs(ja - jb) > 1:  # neighbours share a joint and always touch
                    self.geometry.addCollisionPair(pin.CollisionPair(a, b))
        self.data = model.createData()
        self.geometry_data = pin.GeometryData(self.geometry)

    def min_distance(self, q: np.ndarray) -> tuple[float, str]:
        """Smallest distance [m] over the pairs and the pair's names (inf without pairs)."""
        if len(self.geometry.collisionPairs) == 0:
            return math.inf, ""
        pin.computeDistances(self.model, self.data, self.geometry, self.geometry_data,
                             np.asarray(q, float))
        distances = [r.min_distance for r in self.geometry_data.distanceResults]
        k = int(np.argmin(distances))
        pair = self.geometry.collisionPairs[k]
        objects = self.geometry.geometryObjects
        return float(distances[k]), f"{objects[pair.first].name} / {objects[pair.second].name}"


#: rad, largest joint step between two configurations checked along a path: 0.1 deg moves a
#: point 0.6 m from the axis (the arm's reach) 1 mm, a tenth of the default clearance
PATH_STEP_RAD = math.radians(0.1)


def joint_line(a: np.ndarray, b: np.ndarray, step: float = PATH_STEP_RAD) -> np.ndarray:
    """Configurations (k, n) on the straight joint-space line from ``a`` to ``b`` (both
    included), no joint moving more than ``step`` [rad] between two."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    count = max(1, math.ceil(float(np.abs(b - a).max(initial=0.0)) / step))
    line = a + np.linspace(0.0, 1.0, count + 1)[:, None] * (b - a)
    line[-1] = b  # a + 1.0 (b - a) may miss b by a rounding
    return line


@dataclass(frozen=True)
class PathClearance:
    """The closest approach along a path: distance [m], the pair, and where."""

    distance: float
    pair: str
    configuration: np.ndarray


def path_clearance(checker: ClearanceChecker, configurations: np.ndarray) -> PathClearance:
    """The smallest :meth:`ClearanceChecker.min_distance` over ``configurations`` (k, n)."""
    best = PathClearance(math.inf, "", np.asarray(configurations[0], float))
    for q in configurations:
        distance, pair = checker.min_distance(q)
        if distance < best.distance:
            best = PathClearance(distance, pair, np.asarray(q, float))
    return best


@dataclass(frozen=True)
class Excitation:
    """Eq. 12 for one static configuration: range Q, condition number, clearance [m]."""

    q_range: float
    condition_number: float
    min_clearance: float


class StaticConfigurationProblem:
    """Eq. 12 for the sweep of one joint: variables are the other joints' static angles [rad].

    Args:
        regressor: the arm's gravity regressor.
        pset: the parameter set (gives joint j's columns, ``pset.owner``).
        joint: 0-based sweeping joint.
        sweep_range: (start, end) of the sweep [rad].
        clearance: the checker of eq. 12's distance constraints.
        epsilon: smallest allowed distance [m].
        samples: configurations evaluated along the sweep.
    """

    def __init__(self, regressor: GravityRegressor, pset: ParameterSet, joint: int,
                 sweep_range: tuple[float, float], clearance: ClearanceChecker,
                 epsilon: float = 0.01, samples: int = 12) -> None:
        n = regressor.n
        if not 0 <= joint < n:
            raise ConfigurationError(f"joint index {joint} outside 0..{n - 1}")
        self.regressor, self.pset, self.joint = regressor, pset, joint
        self.clearance, self.epsilon = clearance, epsilon
        self.columns = np.flatnonzero(np.asarray(pset.owner) == joint)
        self.free = np.array([k for k in range(n) if k != joint])
        lower = np.maximum(regressor.model.lowerPositionLimit, -np.pi)
        upper = np.minimum(regressor.model.upperPositionLimit, np.pi)
        self.bounds = np.column_stack([lower[self.free], upper[self.free]])
        self.sweep_angles = np.linspace(sweep_range[0], sweep_range[1], samples)
        self._pinv = np.linalg.pinv(pset.matrix)[:, self.columns]
        self.evaluations = 0

    def configurations(self, x: np.ndarray) -> np.ndarray:
        """The sweep's configurations (samples, n) for the free joints' angles x [rad]."""
        qs = np.zeros((len(self.sweep_angles), self.regressor.n))
        qs[:, self.free] = x
        qs[:, self.joint] = self.sweep_angles
        return qs

    def evaluate(self, x: np.ndarray) -> Excitation:
        """Q, the condition number of joint j's stacked block, and the smallest clearance."""
        qs = self.configurations(np.asarray(x, float))
        block = np.array([self.regressor(q)[self.joint] @ self._pinv for q in qs])
        q_range = float(np.sum(block.max(axis=0) - block.min(axis=0)))
        clearance = min(self.clearance.min_distance(q)[0] for q in qs)
        return Excitation(q_range, condition_number(block), clearance)

    def objective(self, x: np.ndarray) -> float:
        """The paper's evaluation ``W = 1 / (1 + Q)`` (eq. 13); ``1 + violation`` if infeasible."""
        self.evaluations += 1
        e = self.evaluate(x)
        if e.min_clearance <= self.epsilon:
            return 1.0 + (self.epsilon - e.min_clearance)
        return 1.0 / (1.0 + e.q_range)

    def sweep(self, x: np.ndarray, speed: float = MAX_SPEED_RAD_S) -> Sweep:
        """The eq. 11 sweep with the free joints at x."""
        static = np.zeros(self.regressor.n)
        static[self.free] = x
        return Sweep(self.joint, static, float(self.sweep_angles[0]),
                     float(self.sweep_angles[-1]), speed)


@dataclass(frozen=True)
class OptimisationResult:
    """Best point x [rad], its objective W, evaluations and wall time [s]."""

    x: np.ndarray
    objective: float
    evaluations: int
    seconds: float


def ga_pso(
    objective: Callable[[np.ndarray], float], bounds: np.ndarray, *, population: int = 20,
    ga_generations: int = 10, pso_iterations: int = 20, pc: tuple[float, float] = (0.9, 0.6),
    pm: tuple[float, float] = (0.1, 0.01), inertia: float = 0.7, c1: float = 1.5,
    c2: float = 1.5, seed: int = 0,
) -> OptimisationResult:
    """The paper's GA-PSO hybrid (eqs. 13-17), minimising ``objective`` within ``bounds``.

    GA phase (``ga_generations``): tournament selection, arithmetic crossover
    with the adaptive probability of eq. 14 and Gaussian mutation with that of
    eq. 15, where the fitness ``Y = -objective`` (so the best has the largest
    Y): above-average individuals get ``p_c`` reduced from ``p_c1`` toward
    ``p_c2`` and ``p_m`` raised from ``p_m2`` toward ``p_m1`` as they fall
    from the best toward the average; the others get ``p_c1`` and ``p_m1``.
    PSO phase (``pso_iterations``), from the GA's population: velocities
    ``V = w V + c1 r1 (p_best - Y) + c2 r2 (g_best - Y)`` (eq. 16) and positions
    ``Y = Y + V`` (eq. 17), clipped to the bounds.
    """
    rng = np.random.default_rng(seed)
    lower, upper = bounds[:, 0], bounds[:, 1]
    dim = len(lower)
    started = time.perf_counter()
    count = 0

    def f(x: np.ndarray) -> float:
        nonlocal count
        count += 1
        return float(objective(x))

    pop = rng.uniform(lower, upper, (population, dim))
    cost = np.array([f(x) for x in pop])
    for _ in range(ga_generations):
        fit = -cost
        y_max, y_avg = fit.max(), fit.mean()
        spread = max(y_max - y_avg, 1e-12)
        children: list[np.ndarray] = []
        elite = pop[np.argmin(cost)].copy()
        while len(children) < population - 1:
            a, b = (min(rng.choice(population, 2, replace=False), key=lambda k: cost[k])
                    for _ in range(2))
            y_i = max(fit[a], fit[b])
            if y_i > y_avg:  # eqs. 14-15
                p_c = pc[0] - (pc[0] - pc[1]) * (y_i - y_avg) / spread
                p_m = pm[0] - (pm[0] - pm[1]) * (y_max - y_i) / spread
            else:
                p_c, p_m = pc[0], pm[0]
            child = pop[a].copy()
            if rng.random() < p_c:
                w = rng.random(dim)
                child = w * pop[a] + (1 - w) * pop[b]
            mutate = rng.random(dim) < p_m
            child[mutate] += rng.normal(0.0, 0.1 * (upper - lower)[mutate])
            children.append(np.clip(child, lower, upper))
        pop = np.vstack([elite, *children])
        cost = np.array([f(x) for x in pop])
    velocity = np.zeros_like(pop)
    p_best, p_cost = pop.copy(), cost.copy()
    g = int(np.argmin(cost))
    g_best, g_cost = pop[g].copy(), float(cost[g])
    vmax = 0.2 * (upper - lower)
    for _ in range(pso_iterations):
        r1, r2 = rng.random((population, dim)), rng.random((population, dim))
        velocity = inertia * velocity + c1 * r1 * (p_best - pop) + c2 * r2 * (g_best - pop)
        velocity = np.clip(velocity, -vmax, vmax)
        pop = np.clip(pop + velocity, lower, upper)
        cost = np.array([f(x) for x in pop])
        better = cost < p_cost
        p_best[better], p_cost[better] = pop[better], cost[better]
        g = int(np.argmin(p_cost))
        if p_cost[g] < g_cost:
            g_best, g_cost = p_best[g].copy(), float(p_cost[g])
    return OptimisationResult(g_best, g_cost, count, time.perf_counter() - started)


@dataclass(frozen=True)
class StaticChoice:
    """The static configuration of one sweep (eq. 12) and its excitation.

    Attributes:
        static: configuration [rad], (n,): GA-PSO's angles for the other joints
            when ``optimised``, else the default's (the sweeping joint's entry is
            always the default's).
        default: excitation of the default configuration.
        chosen: excitation of ``static``.
        optimised: GA-PSO's solution had a lower ``W`` than the default and was kept.
    """

    static: np.ndarray
    default: Excitation
    chosen: Excitation
    optimised: bool


def optimise_static_configurations(
    regressor: GravityRegressor, pset: ParameterSet, default: np.ndarray,
    ranges: Sequence[tuple[float, float]], clearance: ClearanceChecker, *,
    epsilon: float = 0.01, seed: int = 0,
) -> list[StaticChoice]:
    """Eq. 12 by GA-PSO for the sweep of each joint, kept only where it beats ``default``.

    Args:
        regressor: the arm's gravity regressor.
        pset: the parameter set (gives each joint's columns).
        default: the configuration held without optimisation [rad], (n,).
        ranges: (start, end) of each joint's sweep [rad], joint 1 first.
        clearance: the checker of eq. 12's distance constraints.
        epsilon: smallest allowed distance [m].
        seed: seed of GA-PSO (the same for every sweep).
    """
    default = np.asarray(default, float)
    choices = []
    for joint, sweep_range in enumerate(ranges):
        problem = StaticConfigurationProblem(regressor, pset, joint, sweep_range, clearance,
                                             epsilon=epsilon)
        best = ga_pso(problem.objective, problem.bounds, seed=seed)
        static = default.copy()
        optimised = best.objective < problem.objective(default[problem.free])
        if optimised:
            static[problem.free] = best.x
        choices.append(StaticChoice(static, problem.evaluate(default[problem.free]),
                                    problem.evaluate(static[problem.free]), bool(optimised)))
    return choices


def differential_evolution(
    objective: Callable[[np.ndarray], float], bounds: np.ndarray, *, max_evaluations: int = 620,
    seed: int = 0,
) -> OptimisationResult:
    """scipy's differential evolution on the same objective, with about the same evaluation budget."""
    dim = len(bounds)
    popsize = 4
    maxiter = max(1, max_evaluations // (popsize * dim) - 1)
    started = time.perf_counter()
    res = scipy.optimize.differential_evolution(
        objective, bounds=[tuple(b) for b in bounds], popsize=popsize, maxiter=maxiter,
        seed=seed, polish=False, tol=0.0)
    return OptimisationResult(np.asarray(res.x), float(res.fun), int(res.nfev),
                              time.perf_counter() - started)
