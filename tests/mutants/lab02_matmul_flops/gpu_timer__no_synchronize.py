# mutant: reads a host clock around each call without synchronising: it times the launch
# cell: gpu_timer
def gpu_timer(fn, gpu, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
