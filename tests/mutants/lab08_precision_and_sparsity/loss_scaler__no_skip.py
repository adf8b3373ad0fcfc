# mutant: backs off the scale on inf/NaN but still applies the step
# cell: loss_scaler
# replace: return {"scale": scale * backoff_factor, "growth_tracker": 0}, None
# with: return {"scale": scale * backoff_factor, "growth_tracker": 0}, update
