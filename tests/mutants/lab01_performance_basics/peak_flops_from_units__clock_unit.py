# mutant: takes the clock in MHz as if it were Hz (forgets the 1e6)
# cell: peak_flops_from_units
def peak_flops_from_units(sms, fma_per_clock_per_sm, clock_mhz):
    return sms * fma_per_clock_per_sm * 2 * clock_mhz
