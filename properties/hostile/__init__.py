"""Hostile-input checks as data: input a careless or malicious client could send, and the §7 error
envelope each must get."""
