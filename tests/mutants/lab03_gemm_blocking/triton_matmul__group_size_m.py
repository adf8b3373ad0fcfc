# mutant: uses GROUP_M instead of the last group's smaller size when mapping pid to a tile
# cell: triton_matmul
# replace: pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
# with: pid_m = first_pid_m + ((pid % num_pid_in_group) % GROUP_M)
# replace: pid_n = (pid % num_pid_in_group) // group_size_m
# with: pid_n = (pid % num_pid_in_group) // GROUP_M
