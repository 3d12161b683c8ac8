"""The one exception tree of humanoid_balance.

Every error the package raises on purpose derives from :class:`HumanoidBalanceError`.
Messages say what was expected, what came, and what to do. Timeouts also derive
from the built-in :class:`TimeoutError`. Add new errors here, under the section
of their area.
"""

from __future__ import annotations

from collections.abc import Sequence


class HumanoidBalanceError(Exception):
    """Root of every error raised on purpose by humanoid_balance."""


class ConfigurationError(HumanoidBalanceError, ValueError):
    """A parameter or a configuration file holds a value that cannot be used."""


class InvalidInputError(HumanoidBalanceError, ValueError):
    """An input sample (message, array) is malformed, non-finite or out of range."""


class StaleDataError(HumanoidBalanceError, TimeoutError):
    """An input is older than its timeout; nothing must be built from it."""

    def __init__(self, what: str, age_s: float, timeout_s: float) -> None:
        super().__init__(
            f"{what} is {age_s:.3f} s old, older than its timeout of {timeout_s:.3f} s: "
            "check that its publisher runs and that the clocks agree (use_sim_time)"
        )
        self.what = what
        self.age_s = age_s
        self.timeout_s = timeout_s


# --- models -----------------------------------------------------------------


class ModelError(HumanoidBalanceError):
    """A robot model cannot be loaded or does not have what is asked of it."""


class ModelFileError(ModelError, FileNotFoundError):
    """A URDF file does not exist or does not parse."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot load the robot model {path!r}: {reason}")
        self.path = path
        self.reason = reason


class UnknownJointError(ModelError, KeyError):
    """Joint names that the model does not have."""

    def __init__(self, names: Sequence[str], model_name: str, known: Sequence[str]) -> None:
        self.names = tuple(names)
        self.model_name = model_name
        self.known = tuple(known)
        super().__init__(
            f"joints {list(self.names)} are not in model {model_name!r}; "
            f"it has {len(self.known)} joints: {list(self.known)}"
        )

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class UnknownFrameError(ModelError, KeyError):
    """A frame name that the model does not have."""

    def __init__(self, frame: str, model_name: str) -> None:
        self.frame = frame
        self.model_name = model_name
        super().__init__(f"frame {frame!r} is not in model {model_name!r}")

    def __str__(self) -> str:
        return str(self.args[0])


# --- simulation -------------------------------------------------------------


class SimulationError(HumanoidBalanceError):
    """The physics simulation cannot be built or has become invalid."""


# --- free floating (seed 002) -------------------------------------------------


class DynamicSingularityError(HumanoidBalanceError, ArithmeticError):
    """The generalized Jacobian J* lost rank: a dynamic singularity of a free-floating robot.

    Carries the singular values of J* (largest first) and the thresholds that
    were crossed, so that the caller can report them; no joint velocity was
    computed (nothing was divided through).
    """

    def __init__(
        self, singular_values: Sequence[float], min_singular_value: float,
        max_condition_number: float,
    ) -> None:
        self.singular_values = tuple(float(s) for s in singular_values)
        self.min_singular_value = float(min_singular_value)
        self.max_condition_number = float(max_condition_number)
        smallest = self.singular_values[-1] if self.singular_values else 0.0
        largest = self.singular_values[0] if self.singular_values else 0.0
        self.condition_number = largest / smallest if smallest > 0.0 else float("inf")
        super().__init__(
            "dynamic singularity: the generalized Jacobian J* has smallest singular value "
            f"{smallest:.3e} (expected >= {self.min_singular_value:.3e}) and condition number "
            f"{self.condition_number:.3e} (expected <= {self.max_condition_number:.3e}); "
            f"singular values {[float(f'{s:.3e}') for s in self.singular_values]}. "
            "No joint velocity was commanded: stop the hands, or move the arms away from "
            "this configuration with a joint-space command"
        )


# --- waist (seed 003: differential waist, CAN drives) -------------------------


class BusLoadError(ConfigurationError):
    """The chosen frames and rates would load the CAN bus beyond the allowed share."""

    def __init__(self, load_pct: float, max_pct: float, bitrate: int, detail: str) -> None:
        super().__init__(
            f"CAN bus load {load_pct:.1f} % of {bitrate} bit/s exceeds the allowed {max_pct:.1f} % "
            f"({detail}): lower servo_rate, raise can.bitrate or send fewer frames")
        self.load_pct = load_pct
        self.max_pct = max_pct
        self.bitrate = bitrate


class CanBusError(HumanoidBalanceError):
    """The CAN bus cannot be opened or used (interface missing, bus-off, send failed)."""


class CanBusOffError(CanBusError):
    """The bus is off (latched until ``recover()``, i.e. ``reset_fault``): nothing is sent.

    The message is exactly :attr:`message` (``"CAN bus off"``), the fault reason the
    waist controller reports whether it meets the bus-off in its safety check or in a send.
    """

    message = "CAN bus off"

    def __init__(self) -> None:
        super().__init__(self.message)


# --- identification (seed 004: gravity parameters of the lunar arm) -----------


class IdentificationError(HumanoidBalanceError):
    """Gravity-parameter identification cannot be done with what it was given."""


class InsufficientSamplesError(IdentificationError, ValueError):
    """Fewer samples than parameters to estimate."""

    def __init__(self, what: str, samples: int, parameters: Sequence[str]) -> None:
        self.samples = samples
        self.parameters = tuple(parameters)
        super().__init__(
            f"{what}: {samples} samples for {len(self.parameters)} parameters "
            f"{list(self.parameters)}; expected at least {len(self.parameters)}: "
            "record a longer sweep or more configurations")


class UnidentifiableParametersError(IdentificationError, ArithmeticError):
    """The regressor lost rank: some parameters cannot be told apart from the data."""

    def __init__(self, what: str, rank: int, parameters: Sequence[str],
                 unidentifiable: Sequence[str]) -> None:
        self.rank = rank
        self.parameters = tuple(parameters)
        self.unidentifiable = tuple(unidentifiable)
        super().__init__(
            f"{what}: the regressor has rank {rank}, expected {len(self.parameters)}; "
            f"parameters {list(self.unidentifiable)} cannot be identified from these samples "
            "(they do not change the torques, or only together with others): sweep the "
            "joint further, choose other static configurations, or drop them from the set")
