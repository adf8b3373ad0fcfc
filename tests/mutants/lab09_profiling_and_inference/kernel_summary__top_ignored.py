# mutant: returns the whole table whatever top says
# cell: kernel_summary
# replace: return rows if top is None else rows[:top]
# with: return rows
