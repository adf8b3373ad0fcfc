# mutant: returns a percentage
# cell: utilization
def utilization(achieved, peak):
    return 100 * achieved / peak
