# mutant: does not restart the count of clean steps after an overflow
# cell: loss_scaler
# replace: return {"scale": scale * backoff_factor, "growth_tracker": 0}, None
# with: return {"scale": scale * backoff_factor, "growth_tracker": state["growth_tracker"]}, None
