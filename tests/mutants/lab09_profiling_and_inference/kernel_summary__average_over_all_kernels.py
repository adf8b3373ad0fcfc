# mutant: averages every row over all kernels' instances instead of the row's own
# cell: kernel_summary
def kernel_summary(events, top=None):
    durations = {}
    for e in events:
        durations.setdefault(e["name"], []).append(e["duration_ns"])
    grand_total = sum(sum(d) for d in durations.values())
    mean_all = grand_total / len(events)
    rows = [{"name": name, "instances": len(d), "total_ns": sum(d), "avg_ns": mean_all,
             "min_ns": min(d), "max_ns": max(d), "time_pct": 100 * sum(d) / grand_total}
            for name, d in durations.items()]
    rows.sort(key=lambda r: r["total_ns"], reverse=True)
    return rows if top is None else rows[:top]
