
B	head_sinkJ—-…8X4F6