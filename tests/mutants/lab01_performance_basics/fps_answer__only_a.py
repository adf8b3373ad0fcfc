# mutant: believes latency is always 1/throughput
# cell: fps_answer
FPS_ANSWER = "A"
