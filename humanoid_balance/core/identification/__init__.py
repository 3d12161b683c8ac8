"""Gravity-parameter identification of a serial arm at very low speed (seed 004).

- :mod:`.regressor`: gravity regressor, base and composite parameter sets (eqs. 6-8)
- :mod:`.estimation`: friction pairing (eq. 5), sequential (eq. 10), global and noise-weighted least squares
- :mod:`.trajectory`: the sweep trajectory (eq. 11)
- :mod:`.optimisation`: static configurations (eq. 12), GA-PSO (eqs. 13-17)
- :mod:`.procedure`: sweeps cut from a joint-state stream, the estimate, timing, results
- :mod:`.arm`: the arm of a run (model, limits, collision geometry, the checked plan)
- :mod:`.inputs`: the run's joint states (read, rejected, why not usable)
- :mod:`.run`: the run without ROS (states, braking stops, clock rules), as the node runs it

The constants below live here, not in the modules that use them, so that
command-line parsers name them without importing scipy or pinocchio.
"""

#: estimators of :func:`.procedure.identify`: eq. 10, one least squares, one weighted by joint noise
METHODS = ("sequential", "global", "weighted")
#: magnitude of Earth's gravity [m/s^2]
EARTH_GRAVITY = 9.81
#: joints of the seed-004 lunar arm (urdf/lunar_arm.urdf), in chain order: the chain
#: :func:`.regressor.identification_parameters` gives eq. 8's composite parameters for
LUNAR_JOINTS = tuple(f"joint{i}" for i in range(1, 7))
#: friction-free samples averaged per block: at 1 kHz and 3 deg/s a block spans 0.03 deg
#: (see :func:`.procedure.paired_samples`)
DEFAULT_AVERAGE = 10
