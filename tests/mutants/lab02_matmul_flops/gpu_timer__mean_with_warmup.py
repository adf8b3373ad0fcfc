# mutant: times every run, warm-up included, and reports the mean
# cell: gpu_timer
def gpu_timer(fn, gpu, warmup=3, repeats=10):
    events = [(gpu.Event(enable_timing=True), gpu.Event(enable_timing=True)) for _ in range(warmup + repeats)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    gpu.synchronize()
    return statistics.mean(start.elapsed_time(end) / 1e3 for start, end in events)
