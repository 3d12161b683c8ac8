"""humanoid_balance: balance a humanoid while its arms work fast.

Sub-packages:
  core/   the papers' mathematics on numpy arrays and pinocchio models (no ROS)
  can/    the CAN protocol of the waist drives, the bus and a simulated drive
  sim/    MuJoCo simulations of the seed robots (no ROS)
  nodes/  thin ROS 2 nodes around core objects
  apps/   the ``humanoid-balance`` command-line tools and experiments
"""

__version__ = "0.1.0"
