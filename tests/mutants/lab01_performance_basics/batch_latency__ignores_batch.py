# mutant: latency as the time per frame, whatever the batch
# cell: batch_latency
def batch_latency(throughput_fps, batch):
    return 1 / throughput_fps
