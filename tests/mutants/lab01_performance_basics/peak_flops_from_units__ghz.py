# mutant: converts MHz with 1e9, as if the clock were in GHz
# cell: peak_flops_from_units
def peak_flops_from_units(sms, fma_per_clock_per_sm, clock_mhz):
    return sms * fma_per_clock_per_sm * 2 * clock_mhz * 1e9
