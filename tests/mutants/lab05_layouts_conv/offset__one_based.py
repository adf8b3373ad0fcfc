# mutant: counts indices from 1
# cell: offset
def offset_of(coord, strides):
    return sum((i + 1) * s for i, s in zip(coord, strides))
