# mutant: returns milliseconds instead of seconds
# cell: batch_latency
def batch_latency(throughput_fps, batch):
    return 1000 * batch / throughput_fps
