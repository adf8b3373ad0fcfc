# mutant: aligns the causal triangle at the bottom right when Lq != Lk (the contract says top left)
# cell: sdpa
# replace: s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)             # (..., Lq, Lk) scores
# with: s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
# replace: visible = visible & np.tril(np.ones((lq, lk), dtype=bool))
# with: visible = visible & np.tril(np.ones((lq, lk), dtype=bool), k=lk - lq)
# replace: m = np.where(np.isfinite(m), m, 0.0)                    # a row with nothing visible: no -inf - (-inf)
# with: m = np.where(np.isfinite(m), m, 0.0)
# replace: p = np.exp(s - m)                                        # hidden keys: exp(-inf) = 0
# with: p = np.exp(s - m)
