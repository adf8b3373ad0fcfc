# mutant: one pair of events around all the runs: a mean, which slow runs pull up
# cell: gpu_timer
def gpu_timer(fn, gpu, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
    gpu.synchronize()
    start, end = gpu.Event(enable_timing=True), gpu.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    gpu.synchronize()
    return start.elapsed_time(end) / 1e3 / repeats
