
bool	Bgather_boolJ