# mutant: divides the scores by d instead of sqrt(d)
# cell: sdpa
# fails: test_sdpa, test_mhsa
# replace: s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)             # (..., Lq, Lk) scores
# with: s = q @ np.swapaxes(k, -1, -2) / d
# replace: m = np.where(np.isfinite(m), m, 0.0)                    # a row with nothing visible: no -inf - (-inf)
# with: m = np.where(np.isfinite(m), m, 0.0)
# replace: p = np.exp(s - m)                                        # hidden keys: exp(-inf) = 0
# with: p = np.exp(s - m)
