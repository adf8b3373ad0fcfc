# mutant: cuts N // k elements per chunk, so the last N % k elements are never gathered
# cell: ring_all_gather
# fails: test_ring_all_gather, test_ring_all_reduce
# replace: chunks = torch.tensor_split(tensor.view(-1), k)
# with: size = tensor.numel() // k; chunks = [tensor.view(-1)[i * size:(i + 1) * size] for i in range(k)]
