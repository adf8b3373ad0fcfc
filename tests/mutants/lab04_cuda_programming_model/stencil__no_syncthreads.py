# mutant: no cuda.syncthreads(): threads read neighbours' shared values before they are written
# cell: stencil
# replace: cuda.syncthreads()
# with: pass
