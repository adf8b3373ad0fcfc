# mutant: counts only the weights as memory traffic
# cell: linear_intensity
def linear_intensity(batch, in_features, out_features, bytes_per_element):
    return 2 * batch * in_features * out_features / (in_features * out_features * bytes_per_element)
