"""`make bench`: quality and speed of our search against the upstream `ai` algorithm, at 48 to 100,000 templates.

Modules: ``baseline`` (the upstream algorithm, ported), ``synthetic`` (realistic template variants for large
corpora), ``corpus`` (building and caching the benchmark corpora and their vectors), ``measure`` (timers,
percentiles, RSS), ``stdio`` (latency and cold start through the real server process), ``report`` (JSON,
Markdown, plots) and ``run`` (the orchestration).
"""
