# mutant: the bytes read divided by 32, as if they were contiguous and aligned
# cell: sectors
# replace: return len(touched)
# with: return -(-len(addresses) * access_bytes // 32)
