# mutant: ignores warmup (the median hides the slow first call, but the contract asks for a warm-up)
# cell: cpu_timer
def cpu_timer(fn, warmup=1, repeats=5):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
