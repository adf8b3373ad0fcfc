# mutant: closes a bucket before the tensor that would pass the cap, not after it (not DDP's rule)
# cell: plan_buckets
def plan_buckets(param_bytes, cap_bytes):
    """Parameter indices in buckets of about cap_bytes, filled from the last parameter."""
    buckets, current, size = [], [], 0
    for i in reversed(range(len(param_bytes))):
        if current and size + param_bytes[i] > cap_bytes:
            buckets.append(current)
            current, size = [], 0
        current.append(i)
        size += param_bytes[i]
    if current:
        buckets.append(current)
    return buckets
