# mutant: stores the winner but tunes again every time
# cell: tune
# replace: if key in cache:
# with: if False:
