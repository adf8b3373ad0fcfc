# mutant: pairs the coordinate with the strides in reverse order
# cell: offset
def offset_of(coord, strides):
    return sum(i * s for i, s in zip(coord, reversed(strides)))
