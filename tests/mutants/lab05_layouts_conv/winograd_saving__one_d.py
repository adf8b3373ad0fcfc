# mutant: the 1-D saving of F(2, 3) (6 multiplies against 4)
# cell: winograd_saving
WINOGRAD_SAVING = 6 / 4
