# mutant: the causal mask hides the diagonal: key c visible to row r only when c < r
# cell: attention_kernel
# fails: test_attention_kernel, test_kernel_speed
# replace: visible = visible & (cols[None, :] <= rows[:, None])
# with: visible = visible & (cols[None, :] < rows[:, None])
