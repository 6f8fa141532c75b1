
float16W
B	where_f16JDL@L@L@L@L@L@L@L@L@L@L@L@L@L@L@L@L@ó¸ó¸ó¸ó¸ó¸ó¸ó¸ó¸ó¸ó¸ó¸ó¸ó¸ó¸ó¸ó¸ó¸