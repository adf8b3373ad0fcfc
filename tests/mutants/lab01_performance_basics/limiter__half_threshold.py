# mutant: calls a unit busy at 50%
# cell: limiter
def limiter(math_utilization, memory_utilization):
    busy_math, busy_memory = math_utilization >= 0.5, memory_utilization >= 0.5
    if busy_math and busy_memory:
        return "both"
    if busy_math:
        return "math"
    if busy_memory:
        return "memory"
    return "latency"
