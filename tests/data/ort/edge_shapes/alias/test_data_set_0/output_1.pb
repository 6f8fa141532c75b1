
bool'	Balias_equal_xxJ	Balias_equal_xx_sJ