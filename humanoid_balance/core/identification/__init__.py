"""Gravity-parameter identification of a serial arm at very low speed (seed 004).

- :mod:`.regressor`: gravity regressor, base and composite parameter sets (eqs. 6-8)
- :mod:`.estimation`: friction pairing (eq. 5), sequential and global least squares (eq. 10)
- :mod:`.trajectory`: the sweep trajectory (eq. 11)
- :mod:`.optimisation`: static configurations (eq. 12), GA-PSO (eqs. 13-17)
"""
