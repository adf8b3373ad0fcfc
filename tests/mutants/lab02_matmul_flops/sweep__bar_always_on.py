# mutant: shows the progress bar even with progress=False (tqdm writes to stderr while grading)
# cell: sweep
def sweep(sizes, dtypes, measure, progress=True):
    return {dtype: [measure(n, dtype) for n in tqdm(sizes)] for dtype in dtypes}
