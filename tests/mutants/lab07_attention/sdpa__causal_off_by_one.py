# mutant: the causal triangle also hides the diagonal: query i sees only keys j < i
# cell: sdpa
# fails: test_sdpa, test_mhsa
# replace: s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)             # (..., Lq, Lk) scores
# with: s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
# replace: visible = visible & np.tril(np.ones((lq, lk), dtype=bool))
# with: visible = visible & np.tril(np.ones((lq, lk), dtype=bool), k=-1)
# replace: m = np.where(np.isfinite(m), m, 0.0)                    # a row with nothing visible: no -inf - (-inf)
# with: m = np.where(np.isfinite(m), m, 0.0)
# replace: p = np.exp(s - m)                                        # hidden keys: exp(-inf) = 0
# with: p = np.exp(s - m)
