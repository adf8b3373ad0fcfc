# mutant: blames the dot-product orders for the most traffic instead of the column-walking ones
# cell: traffic_orders
BEST_ORDER = "ikj"
WORST_ORDERS = ["ijk", "jik"]
