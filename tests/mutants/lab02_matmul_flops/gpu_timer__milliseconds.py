# mutant: returns elapsed_time as it comes, in milliseconds
# cell: gpu_timer
def gpu_timer(fn, gpu, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
    gpu.synchronize()
    events = [(gpu.Event(enable_timing=True), gpu.Event(enable_timing=True)) for _ in range(repeats)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    gpu.synchronize()
    return statistics.median(start.elapsed_time(end) for start, end in events)
