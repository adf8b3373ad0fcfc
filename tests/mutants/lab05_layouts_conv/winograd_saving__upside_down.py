# mutant: Winograd's multiplies over direct ones
# cell: winograd_saving
WINOGRAD_SAVING = 16 / 36
