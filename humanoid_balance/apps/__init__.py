"""The ``humanoid-balance`` sub-commands, one module each (see :mod:`humanoid_balance.cli`)."""
