"""The one foot layout: which URDF frames are each foot's sole, contact points and FSRs.

Every user of the feet (``zmp_estimator``, the arm loop, the strike experiment, the
recorded-run report) takes the feet from one :class:`FootLayout` instead of its own
frame names, its own hull or its own reading of ``config/zmp.yaml`` (issue 34). The
layout holds frame *names* only; the coordinates come from the URDF::

    from humanoid_balance.core.foot_layout import FootLayout

    layout = FootLayout.seed()                       # {side}_sole, {side}_fsr_{0..3}
    layout = FootLayout.from_zmp_yaml()              # the package's config/zmp.yaml
    layout = FootLayout.from_zmp_yaml("team.yaml")   # a team's file over the package's
    layout = FootLayout.from_zmp_values(values)      # zmp_estimator's parameters
    layout.contact_points_in_sole(model)   # side -> (N, 2) [m], sole frame, frame order
    layout.fsr_points_in_sole(model)       # side -> (N, 2) [m], in /{side}_foot/fsr order
    layout.support_polygon(model)          # core.support.SupportPolygon of the contact points
    layout.soles_in_world(model, q)        # side -> world <- sole (4 x 4) at q

Every frame must lie on its sole's surface (z = 0 of the sole frame, within 0.1 mm) and be
rigidly attached to it (:meth:`~humanoid_balance.core.support.SupportPolygon.from_model`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from humanoid_balance.core.support import SEED_PADS, SIDES, SupportPolygon, contact_frame_names
from humanoid_balance.exceptions import ConfigurationError

if TYPE_CHECKING:  # no pinocchio import for the names alone (parameter configs hold a layout)
    from humanoid_balance.core.model import RobotModel

__all__ = ["FootLayout"]

#: the node whose parameters name the feet's frames
_ZMP_NODE = "zmp_estimator"


def _frames(side: str, kind: str, names: Any) -> tuple[str, ...]:
    if isinstance(names, str) or not isinstance(names, Sequence) or not names:
        raise ConfigurationError(f"{side} foot: {kind} {names!r}: expected a non-empty list of "
                                 "URDF frame names")
    out = tuple(str(n) for n in names)
    if any(not n for n in out):
        raise ConfigurationError(f"{side} foot: {kind} {list(out)} holds an empty frame name")
    return out


@dataclass(frozen=True)
class FootLayout:
    """The feet's URDF frames by side.

    Attributes:
        sole_frames: side -> the sole frame (origin on the sole surface, z up).
        contact_frames: side -> the frames where the foot touches the ground; the support
            polygon is the hull of those of the feet in contact.
        fsr_frames: side -> the FSR frames, in the order of ``/{side}_foot/fsr``.
        sides: the feet, in order.

    Raises:
        ConfigurationError: a side without its frames, or an empty frame list or name.
    """

    sole_frames: dict[str, str]
    contact_frames: dict[str, tuple[str, ...]]
    fsr_frames: dict[str, tuple[str, ...]]
    sides: tuple[str, ...] = SIDES

    def __post_init__(self) -> None:
        if not self.sides:
            raise ConfigurationError("a foot layout needs at least one foot")
        for side in self.sides:
            for kind, table in (("sole_frame", self.sole_frames),
                                ("contact_frames", self.contact_frames),
                                ("fsr_frames", self.fsr_frames)):
                if side not in table:
                    raise ConfigurationError(f"{side} foot: no {kind} in the foot layout")
            if not isinstance(self.sole_frames[side], str) or not self.sole_frames[side]:
                raise ConfigurationError(
                    f"{side} foot: sole_frame {self.sole_frames[side]!r}: expected a URDF frame name")
        # lists (from YAML or parameters) become tuples; only this layout's sides are kept
        object.__setattr__(self, "sides", tuple(self.sides))
        object.__setattr__(self, "sole_frames", {s: self.sole_frames[s] for s in self.sides})
        object.__setattr__(self, "contact_frames", {
            s: _frames(s, "contact_frames", self.contact_frames[s]) for s in self.sides})
        object.__setattr__(self, "fsr_frames", {
            s: _frames(s, "fsr_frames", self.fsr_frames[s]) for s in self.sides})

    @classmethod
    def seed(cls) -> FootLayout:
        """The seed humanoid's: soles ``{side}_sole``; contact and FSR frames its four FSR
        pads ``{side}_fsr_{0..3}`` (where it touches the floor)."""
        pads = {side: contact_frame_names(side, SEED_PADS) for side in SIDES}
        return cls({side: f"{side}_sole" for side in SIDES}, dict(pads), dict(pads))

    @classmethod
    def from_zmp_values(cls, values: Mapping[str, Any]) -> FootLayout:
        """From ``zmp_estimator``'s parameters, flat (``{side}.sole_frame``,
        ``{side}.contact_frames``, ``{side}.fsr_frames``) or nested (``{side}: {...}``).

        Raises:
            ConfigurationError: a parameter is missing or not a frame name (list).
        """
        def value(side: str, key: str) -> Any:
            if f"{side}.{key}" in values:
                return values[f"{side}.{key}"]
            nested = values.get(side)
            if isinstance(nested, Mapping) and key in nested:
                return nested[key]
            raise ConfigurationError(f"zmp_estimator parameters: no {side}.{key}")

        return cls({s: value(s, "sole_frame") for s in SIDES},
                   {s: value(s, "contact_frames") for s in SIDES},
                   {s: value(s, "fsr_frames") for s in SIDES})

    @classmethod
    def from_zmp_yaml(cls, path: str | Path | None = None) -> FootLayout:
        """From a ``zmp_estimator`` parameter file, as the node would get it.

        Args:
            path: a team's parameter file, applied over the package's ``config/zmp.yaml``
                (as the launch files pass it); None: the package's file alone. The
                spec's defaults fill what the files do not name.

        Raises:
            ConfigurationError: a file cannot be read or names no valid frames.
        """
        from humanoid_balance.params.files import merged_parameters, read_parameter_file
        from humanoid_balance.params.zmp_estimator import SPEC
        from humanoid_balance.resources import config_path

        files = [read_parameter_file(config_path("zmp.yaml"))]
        if path is not None:
            files.append(read_parameter_file(path))
        values = {**SPEC.defaults(), **merged_parameters(files, f"/{_ZMP_NODE}")}
        return cls.from_zmp_values(values)

    def contact_points_in_sole(self, model: RobotModel) -> dict[str, np.ndarray]:
        """side -> (N, 2) contact points [m] in the sole frame, in frame order, from the URDF.

        Raises:
            UnknownFrameError: a frame is not in the model.
            ConfigurationError: a frame is off its sole's surface or not attached to it.
        """
        return self._in_sole(model, self.contact_frames)

    def fsr_points_in_sole(self, model: RobotModel) -> dict[str, np.ndarray]:
        """side -> (N, 2) FSR points [m] in the sole frame, in ``/{side}_foot/fsr`` order.

        Raises:
            UnknownFrameError: a frame is not in the model.
            ConfigurationError: a frame is off its sole's surface or not attached to it.
        """
        return self._in_sole(model, self.fsr_frames)

    def support_polygon(self, model: RobotModel) -> SupportPolygon:
        """The support polygon of these feet: the hull of the contact points of those in
        contact (:class:`~humanoid_balance.core.support.SupportPolygon`).

        Raises:
            UnknownFrameError: a frame is not in the model.
            ConfigurationError: a frame is off its sole's surface or not attached to it.
        """
        return SupportPolygon(self.contact_points_in_sole(model))

    def soles_in_world(self, model: RobotModel, q: np.ndarray) -> dict[str, np.ndarray]:
        """side -> world <- sole (4 x 4) at configuration ``q`` (for
        :meth:`SupportPolygon.update`)."""
        return {side: model.frame_transform(self.sole_frames[side], q) for side in self.sides}

    def _in_sole(self, model: RobotModel,
                 frames: Mapping[str, tuple[str, ...]]) -> dict[str, np.ndarray]:
        polygon = SupportPolygon.from_model(
            model, contact_frames={s: frames[s] for s in self.sides},
            sole_frames=self.sole_frames)
        return dict(polygon.points_in_sole)
