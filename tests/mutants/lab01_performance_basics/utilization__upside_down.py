# mutant: peak over achieved
# cell: utilization
def utilization(achieved, peak):
    return peak / achieved if achieved else float("inf")
