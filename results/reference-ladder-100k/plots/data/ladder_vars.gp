ladder_n = 6
ladder_series = "asyncio-streams asyncio-protocol uvloop uvloop uvloop pyext"
ladder_title = "The ladder of fixes at 100k: what each step saves (in brackets: the change against step N)"
ladder_bytes_tic = 5000
ladder_note = "medians of the ok runs only (3 per step); a step without an ok run: no bar, its reason"
