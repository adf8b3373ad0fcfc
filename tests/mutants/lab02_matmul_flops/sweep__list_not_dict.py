# mutant: returns a list of lists instead of a dict keyed by dtype
# cell: sweep
def sweep(sizes, dtypes, measure, progress=True):
    return [[measure(n, dtype) for n in tqdm(sizes, disable=not progress)] for dtype in dtypes]
