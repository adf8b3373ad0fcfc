# mutant: picks one batch size
# cell: fps_answer
FPS_ANSWER = "C"
