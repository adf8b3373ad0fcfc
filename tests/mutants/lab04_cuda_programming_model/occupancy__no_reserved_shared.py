# mutant: the driver's reserved shared memory per block and the granularity ignored
# cell: occupancy
# replace: shared = -(-(shared_bytes + L.reserved_shared_memory_per_block) // gran) * gran
# with: shared = shared_bytes
