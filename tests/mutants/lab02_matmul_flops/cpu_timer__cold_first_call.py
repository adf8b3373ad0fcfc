# mutant: times one call, the cold first one, with no warm-up
# cell: cpu_timer
def cpu_timer(fn, warmup=1, repeats=5):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
