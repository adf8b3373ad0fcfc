# mutant: walks the chunks the wrong way round (sends chunk (r + s) % k): ranks receive chunks nobody has yet
# cell: ring_all_gather
# fails: test_ring_all_gather, test_ring_all_reduce
# replace: out, into = chunks[(rank - s) % k], chunks[(rank - s - 1) % k]
# with: out, into = chunks[(rank + s) % k], chunks[(rank + s + 1) % k]
