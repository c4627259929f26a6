# rss.gp - server RSS (RssAnon summed over the parent and its workers) vs tier.
load gpdir.'/common.gp'
ttl = 'Server memory with N idle connections (RssAnon, all processes)'
yl = 'MiB'.(logy_rss ? ' (log scale)' : '')
col = 5
logy = logy_rss; base = base_rss
load gpdir.'/tiers.gp'
