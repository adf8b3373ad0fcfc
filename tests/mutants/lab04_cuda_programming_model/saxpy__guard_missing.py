# mutant: no guard: threads of the last block beyond n write past the end
# cell: saxpy
# replace: if i < n:
# with: if True:
