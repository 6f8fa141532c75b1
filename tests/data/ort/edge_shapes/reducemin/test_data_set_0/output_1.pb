
int32#Breducemin_i32Jûÿÿÿûÿÿÿüÿÿÿ