

from humanoid_balance.nodes.quiet_start import exit_quietly_if_starting_one_of, no_rendering_in

# a node's process stopped while it still imports exits with status 0, no traceback
# (humanoid_balance.nodes.quiet_start); nothing happens when the package is merely imported
exit_quietly_if_starting_one_of(("zmp_estimator", "arm_balance", "waist_controller",
                                 "identification_executor", "mujoco_sim"))
# the simulation node never renders: no OpenGL context, no glfw version check at import
no_rendering_in("mujoco_sim")
