# mutant: ranks by the mean time, which one slow outlier run drags up
# cell: find
def find(candidates, timer=bench.measure, workspace_limit=None):
    ran, others = [], []
    for cand in candidates:
        if not cand.supported:
            others.append((cand.name, "NOT_SUPPORTED", math.inf, cand.workspace))
        elif workspace_limit is not None and cand.workspace > workspace_limit:
            others.append((cand.name, "ALLOC_FAILED", math.inf, cand.workspace))
        else:
            ran.append((cand.name, "SUCCESS", timer(cand.run).mean, cand.workspace))
    ran.sort(key=lambda record: record[2])
    return ran + others
