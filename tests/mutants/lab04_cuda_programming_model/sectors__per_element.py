# mutant: one sector per thread, not per distinct 32-byte segment
# cell: sectors
# replace: return len(touched)
# with: return len(addresses)
