# mutant: 32 divided by the number of distinct banks touched
# cell: bank_conflicts
# replace: return max(len(words) for words in banks.values())
# with: return 32 // len(banks)
