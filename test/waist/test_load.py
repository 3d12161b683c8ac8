"""The torso the waist carries (humanoid_balance/waist/load.py), from the humanoid's model."""

from __future__ import annotations

import pytest

from humanoid_balance.core.model import RobotModel
from humanoid_balance.resources import urdf_path
from humanoid_balance.waist.load import TorsoLoad, upper_body_load


def test_the_upper_body_load_is_the_mass_above_the_waist() -> None:
    """upper_body_load: the mass above waist_pitch (summed here link by link), CoM above the axes."""
    model = RobotModel(urdf_path("humanoid"))
    m = model.model
    above = {m.getJointId("waist_pitch")}
    for jid in range(1, m.njoints):
        if m.parents[jid] in above:
            above.add(jid)
    mass = sum(m.inertias[j].mass for j in above)
    load = upper_body_load(model)
    assert load.mass_kg == pytest.approx(mass, rel=1e-12)
    assert load.com_height_m > 0.0
    assert load.inertia_kg_m2 == pytest.approx((mass * load.com_height_m**2,) * 2, rel=1e-12)


def test_the_load_says_what_it_is() -> None:
    """str(TorsoLoad) names the mass and the CoM height (the node logs it)."""
    assert str(TorsoLoad(mass_kg=25.0, com_height_m=0.3)) == "25.0 kg at 0.300 m above the waist axes"
