# mutant: threads reading the same word counted as a conflict (no broadcast)
# cell: bank_conflicts
# replace: banks.setdefault(w % 32, set()).add(w)
# with: banks.setdefault(w % 32, []).append(w)
