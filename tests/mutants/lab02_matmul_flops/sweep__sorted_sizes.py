# mutant: sorts the sizes instead of keeping the order given
# cell: sweep
def sweep(sizes, dtypes, measure, progress=True):
    with tqdm(total=len(sizes) * len(dtypes), disable=not progress) as bar:
        results = {}
        for dtype in dtypes:
            results[dtype] = []
            for n in sorted(sizes):
                results[dtype].append(measure(n, dtype))
                bar.update()
    return results
