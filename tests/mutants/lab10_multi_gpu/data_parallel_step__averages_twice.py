# mutant: divides by k twice (averages the already averaged gradient again)
# cell: data_parallel_step
# replace: flat /= k
# with: flat /= k * k
