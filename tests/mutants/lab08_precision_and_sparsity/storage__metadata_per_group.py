# mutant: counts 2 bits of metadata per group of 4 instead of per kept value
# cell: storage
# replace: value_bits, metadata_bits = kept * bits, kept * 2
# with: value_bits, metadata_bits = kept * bits, (m * k // 4) * 2
