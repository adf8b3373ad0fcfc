# mutant: records events but reads elapsed_time before the device reached them
# cell: gpu_timer
def gpu_timer(fn, gpu, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start, end = gpu.Event(enable_timing=True), gpu.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)
