prof_tier = '100k (backoff)'
prof_contenders = 'c'
prof_log = 0
prof_cols = '2 3 4 5 6'
abl_contenders = 'c'
abl_tier = '100k (backoff)'
