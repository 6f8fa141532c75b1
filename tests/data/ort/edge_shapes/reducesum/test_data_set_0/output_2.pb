
int32Breducesum_i32_allJýÿÿÿ