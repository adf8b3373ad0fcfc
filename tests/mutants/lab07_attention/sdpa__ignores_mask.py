# mutant: never applies the mask (only the causal triangle): every key stays visible
# cell: sdpa
# replace: visible = visible & mask
# with: visible = visible
