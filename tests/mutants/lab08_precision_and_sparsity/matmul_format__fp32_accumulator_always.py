# mutant: accumulates in FP32 whatever the accumulator asked for
# cell: matmul_format
# replace: acc_type = np.float32 if accumulate == "fp32" else np.float16
# with: acc_type = np.float32
