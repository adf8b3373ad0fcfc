# mutant: forgets to divide the scores by sqrt(d)
# cell: sdpa
# fails: test_sdpa, test_mhsa
# replace: lq, lk, d = q.shape[-2], k.shape[-2], q.shape[-1]
# with: lq, lk = q.shape[-2], k.shape[-2]
# replace: s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)             # (..., Lq, Lk) scores
# with: s = q @ np.swapaxes(k, -1, -2)
# replace: m = np.where(np.isfinite(m), m, 0.0)                    # a row with nothing visible: no -inf - (-inf)
# with: m = np.where(np.isfinite(m), m, 0.0)
# replace: p = np.exp(s - m)                                        # hidden keys: exp(-inf) = 0
# with: p = np.exp(s - m)
