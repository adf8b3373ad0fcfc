# mutant: keeps the candidate with the smallest mean time, which one interrupted run pulls up, instead of the median
# cell: tune
# replace: t = float(np.median(times))
# with: t = float(np.mean(times))
