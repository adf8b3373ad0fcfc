# mutant: doubles the scale after every clean step
# cell: loss_scaler
# replace: if clean == growth_interval:
# with: if clean >= 1:
