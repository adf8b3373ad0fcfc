# mutant: folding removes batch norm, but forgets the layout conversions NHWC removes
# cell: lecture_answer
LECTURE_ANSWER = "A"
