# rss.gp - server RSS (RssAnon summed over the parent and its workers) vs tier.
load gpdir.'/common.gp'
ttl = 'Server memory with N idle connections (RssAnon, all processes)'
set ylabel 'MiB'
col = 5
load gpdir.'/tiers.gp'
