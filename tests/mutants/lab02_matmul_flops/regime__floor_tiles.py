# mutant: counts tiles with floor division: a partial tile at the edge is forgotten
# cell: regime
def regime(n, sms, peak_flops, launch_overhead_s=5e-6, tile=128):
    if 2 * n ** 3 / peak_flops < launch_overhead_s:
        return "launch"
    tiles = (n // tile) ** 2
    if tiles < sms:
        return "underfilled"
    waves = math.ceil(tiles / sms)
    if tiles / (waves * sms) < 0.8:
        return "waves"
    return "compute"
