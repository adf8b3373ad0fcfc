# mutant: times every call, warm-up included, and reports the mean
# cell: cpu_timer
def cpu_timer(fn, warmup=1, repeats=5):
    times = []
    for _ in range(warmup + repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.mean(times)
