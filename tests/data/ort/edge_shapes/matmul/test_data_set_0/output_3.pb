
float162
B
matmul_f16J¹´B40Š²¼¢³O1Õ¯Â,z*±q³Mµ{°U,