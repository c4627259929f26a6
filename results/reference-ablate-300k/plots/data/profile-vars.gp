prof_tier = '300k'
prof_contenders = 'c pyext'
prof_log = 0
prof_cols = '2 3 4 5 6'
abl_contenders = 'c pyext'
abl_tier = '300k'
