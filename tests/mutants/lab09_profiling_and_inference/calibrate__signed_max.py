# mutant: takes the largest value instead of the largest magnitude
# cell: calibrate
# replace: return float(a.max())
# with: return float(np.max(x))
