# mutant: warms up, but reports the mean, which slow runs pull up
# cell: cpu_timer
def cpu_timer(fn, warmup=1, repeats=5):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.mean(times)
