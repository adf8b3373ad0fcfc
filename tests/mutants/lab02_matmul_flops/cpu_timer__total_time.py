# mutant: returns the total time of all repeats, not the time of one run
# cell: cpu_timer
def cpu_timer(fn, warmup=1, repeats=5):
    for _ in range(warmup):
        fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return time.perf_counter() - start
