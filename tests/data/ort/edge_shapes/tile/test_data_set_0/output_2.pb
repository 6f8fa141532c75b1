
bool	B	tile_boolJ