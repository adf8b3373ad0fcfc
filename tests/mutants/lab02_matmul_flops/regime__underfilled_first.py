# mutant: checks the tiles before the launch overhead
# cell: regime
def regime(n, sms, peak_flops, launch_overhead_s=5e-6, tile=128):
    tiles = math.ceil(n / tile) ** 2
    if tiles < sms:
        return "underfilled"
    if 2 * n ** 3 / peak_flops < launch_overhead_s:
        return "launch"
    waves = math.ceil(tiles / sms)
    if tiles / (waves * sms) < 0.8:
        return "waves"
    return "compute"
