# mutant: uses the all-reduced sum of the gradients without dividing by k
# cell: data_parallel_step
# replace: flat /= k
# with: pass
