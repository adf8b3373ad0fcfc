# mutant: counts the metadata overhead against the dense matrix instead of the kept values
# cell: storage
# replace: "overhead": metadata_bits / value_bits
# with: "overhead": metadata_bits / (m * k * bits)
