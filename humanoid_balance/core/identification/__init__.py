"""Gravity-parameter identification of a serial arm at very low speed (seed 004).

- :mod:`.regressor`: gravity regressor, base and composite parameter sets (eqs. 6-8)
- :mod:`.estimation`: friction pairing (eq. 5), sequential (eq. 10), global and noise-weighted least squares
- :mod:`.trajectory`: the sweep trajectory (eq. 11)
- :mod:`.optimisation`: static configurations (eq. 12), GA-PSO (eqs. 13-17)
"""

#: estimators of :func:`.procedure.identify`: eq. 10, one least squares, one weighted by joint
#: noise (here, not in .procedure, so that command-line parsers name them without scipy)
METHODS = ("sequential", "global", "weighted")
