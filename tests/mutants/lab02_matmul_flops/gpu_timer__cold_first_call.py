# mutant: events and a synchronisation, but only one run: the cold first call
# cell: gpu_timer
def gpu_timer(fn, gpu, warmup=3, repeats=10):
    start, end = gpu.Event(enable_timing=True), gpu.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    gpu.synchronize()
    return start.elapsed_time(end) / 1e3
