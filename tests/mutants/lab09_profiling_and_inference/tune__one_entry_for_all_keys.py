# mutant: caches one winner for every shape
# cell: tune
def tune(key, candidates, run, clock, cache, warmup=2, repeats=3):
    if "best" in cache:
        return cache["best"]
    best, best_time = None, math.inf
    for c in candidates:
        for _ in range(warmup):
            run(c)
        times = []
        for _ in range(repeats):
            t0 = clock()
            run(c)
            times.append(clock() - t0)
        t = float(np.median(times))
        if t < best_time:
            best, best_time = c, t
    cache["best"] = best
    return best
