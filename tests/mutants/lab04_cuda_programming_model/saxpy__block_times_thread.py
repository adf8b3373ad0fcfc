# mutant: i = blockIdx.x * threadIdx.x: threads of different blocks share elements
# cell: saxpy
# replace: i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
# with: i = cuda.blockIdx.x * cuda.threadIdx.x
