# mutant: no warm-up runs (the median hides the cold call, but the contract asks for a warm-up)
# cell: gpu_timer
def gpu_timer(fn, gpu, warmup=3, repeats=10):
    events = [(gpu.Event(enable_timing=True), gpu.Event(enable_timing=True)) for _ in range(repeats)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    gpu.synchronize()
    return statistics.median(start.elapsed_time(end) / 1e3 for start, end in events)
