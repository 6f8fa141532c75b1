
int89Bpool_max_i8J ;II;II))RRZ1"XXO"OO0Oî00