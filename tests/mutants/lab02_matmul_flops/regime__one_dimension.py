# mutant: counts the tiles along one dimension only
# cell: regime
def regime(n, sms, peak_flops, launch_overhead_s=5e-6, tile=128):
    if 2 * n ** 3 / peak_flops < launch_overhead_s:
        return "launch"
    tiles = math.ceil(n / tile)
    if tiles < sms:
        return "underfilled"
    waves = math.ceil(tiles / sms)
    if tiles / (waves * sms) < 0.8:
        return "waves"
    return "compute"
