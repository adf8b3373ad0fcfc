# mutant: picks the outer-product order kij as the least traffic (it re-reads all of C for every k)
# cell: traffic_orders
BEST_ORDER = "kij"
WORST_ORDERS = ["jki", "kji"]
