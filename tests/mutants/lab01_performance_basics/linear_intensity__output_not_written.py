# mutant: counts the bytes read but not the output written
# cell: linear_intensity
def linear_intensity(batch, in_features, out_features, bytes_per_element):
    elements = batch * in_features + in_features * out_features
    return 2 * batch * in_features * out_features / (elements * bytes_per_element)
