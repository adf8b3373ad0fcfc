# mutant: counts fractional waves, so the wave efficiency is always 1
# cell: regime
def regime(n, sms, peak_flops, launch_overhead_s=5e-6, tile=128):
    if 2 * n ** 3 / peak_flops < launch_overhead_s:
        return "launch"
    tiles = math.ceil(n / tile) ** 2
    if tiles < sms:
        return "underfilled"
    waves = tiles / sms
    if tiles / (waves * sms) < 0.8:
        return "waves"
    return "compute"
