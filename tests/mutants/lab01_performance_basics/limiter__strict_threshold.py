# mutant: "more than 0.7" instead of "at least 0.7"
# cell: limiter
def limiter(math_utilization, memory_utilization):
    busy_math, busy_memory = math_utilization > 0.7, memory_utilization > 0.7
    if busy_math and busy_memory:
        return "both"
    if busy_math:
        return "math"
    if busy_memory:
        return "memory"
    return "latency"
