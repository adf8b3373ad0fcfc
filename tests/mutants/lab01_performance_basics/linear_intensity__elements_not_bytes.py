# mutant: divides by elements, forgetting the bytes per element
# cell: linear_intensity
def linear_intensity(batch, in_features, out_features, bytes_per_element):
    elements = batch * in_features + in_features * out_features + batch * out_features
    return 2 * batch * in_features * out_features / elements
