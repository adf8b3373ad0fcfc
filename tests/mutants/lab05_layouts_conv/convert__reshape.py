# mutant: reshapes instead of permuting (relabels the memory instead of moving it)
# cell: convert
# replace: """(N, C, H, W) -> a new, contiguous (N, H, W, C) tensor."""
# with: n, c, h, w = x.shape
# replace: return x.permute(0, 2, 3, 1).contiguous()
# with: return x.reshape(n, h, w, c)
# replace: """(N, H, W, C) -> a new, contiguous (N, C, H, W) tensor."""
# with: n, h, w, c = x.shape
# replace: return x.permute(0, 3, 1, 2).contiguous()
# with: return x.reshape(n, c, h, w)
