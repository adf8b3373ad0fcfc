# mutant: counts an FMA as one operation instead of two
# cell: peak_flops_from_units
def peak_flops_from_units(sms, fma_per_clock_per_sm, clock_mhz):
    return sms * fma_per_clock_per_sm * clock_mhz * 1e6
