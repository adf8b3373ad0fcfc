# mutant: names the quadrant after the idle unit
# cell: limiter
def limiter(math_utilization, memory_utilization):
    busy_math, busy_memory = math_utilization >= 0.7, memory_utilization >= 0.7
    if busy_math and busy_memory:
        return "both"
    if busy_math:
        return "memory"
    if busy_memory:
        return "math"
    return "latency"
