# mutant: the halo is never loaded into shared memory
# cell: stencil
# replace: if cuda.threadIdx.x < RADIUS:
# with: if False:
