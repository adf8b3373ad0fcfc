# mutant: divides the percentile by 100 twice (np.percentile already takes percent)
# cell: calibrate
# replace: return float(np.percentile(a, percentile))
# with: return float(np.percentile(a, percentile / 100))
