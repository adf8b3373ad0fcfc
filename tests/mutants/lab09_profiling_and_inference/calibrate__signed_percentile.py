# mutant: takes the percentile of the values instead of their magnitudes
# cell: calibrate
# replace: return float(np.percentile(a, percentile))
# with: return float(np.percentile(x, percentile))
