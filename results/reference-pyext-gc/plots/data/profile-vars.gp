prof_tier = '1m'
prof_contenders = 'c pyext'
prof_log = 0
prof_cols = '2 3 4 5 6'
