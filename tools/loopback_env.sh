# Sourced by tools/bootstrap.sh and tools/ci_other_pythons.sh: every DDS participant they start
# stays on the loopback interface (config/fastdds_loopback.xml), on a private domain.
export RMW_IMPLEMENTATION=rmw_fastrtps_cpp
export FASTDDS_DEFAULT_PROFILES_FILE="$PWD/config/fastdds_loopback.xml"
export ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT  # not LOCALHOST: see humanoid_balance/ros_env.py
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( 1 + $$ % 100 ))}"
export MPLBACKEND=Agg
