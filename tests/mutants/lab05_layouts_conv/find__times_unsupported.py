# mutant: runs and times unsupported candidates too
# cell: find
def find(candidates, timer=bench.measure, workspace_limit=None):
    ran, others = [], []
    for cand in candidates:
        if workspace_limit is not None and cand.workspace > workspace_limit:
            others.append((cand.name, "ALLOC_FAILED", math.inf, cand.workspace))
        else:
            status = "SUCCESS" if cand.supported else "NOT_SUPPORTED"
            ran.append((cand.name, status, timer(cand.run).median, cand.workspace))
    ran.sort(key=lambda record: record[2])
    return ran + others
