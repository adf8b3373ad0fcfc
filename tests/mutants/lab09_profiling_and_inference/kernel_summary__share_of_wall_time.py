# mutant: shares of the trace's wall-clock span (idle gaps included) instead of the kernels' time
# cell: kernel_summary
def kernel_summary(events, top=None):
    durations = {}
    for e in events:
        durations.setdefault(e["name"], []).append(e["duration_ns"])
    wall = max(e["start_ns"] + e["duration_ns"] for e in events) - min(e["start_ns"] for e in events)
    rows = [{"name": name, "instances": len(d), "total_ns": sum(d), "avg_ns": sum(d) / len(d),
             "min_ns": min(d), "max_ns": max(d), "time_pct": 100 * sum(d) / wall}
            for name, d in durations.items()]
    rows.sort(key=lambda r: r["total_ns"], reverse=True)
    return rows if top is None else rows[:top]
