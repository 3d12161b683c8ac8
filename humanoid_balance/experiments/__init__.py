"""The papers' experiments as library code: simulation runs, named results, metrics.

One module per experiment (:mod:`.strike`, :mod:`.free_floating`, :mod:`.waist`,
:mod:`.identification`): each runs the experiment from its typed settings and
returns frozen dataclasses with named, unit-carrying fields, and turns them into
the metrics of the shared RESULTS.md format. The ``humanoid-balance experiment
NAME`` commands (``apps/experiment_*.py``) only parse the options, call these,
print, plot and write; tests and benchmarks import from here, never from ``apps``.
"""
