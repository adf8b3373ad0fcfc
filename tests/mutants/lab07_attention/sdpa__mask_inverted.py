# mutant: reads the mask upside down: hides the keys where it is True (the contract: True = may attend)
# cell: sdpa
# replace: visible = visible & mask
# with: visible = visible & ~mask
