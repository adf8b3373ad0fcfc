# mutant: the lecture's LAB 2 code: time.time() around one cold call, no synchronisation
# cell: gpu_timer
def gpu_timer(fn, gpu, warmup=3, repeats=10):
    timestt = time.time()
    C = fn()
    timeend = time.time()
    return timeend - timestt
