"""Plain Python the pages stand on, tested without a browser: the run registry (`runs`), a run as the dashboard
keeps it (`records`) and an imported one re-judged from its own calls (`import_judge`), its aggregates and frames,
control values to a RunConfig (`run_settings`), a run's own link (`run_link`), a pair's counters
(`pair_counters`), sweep jobs, scene links and played scenes. Never imports streamlit or plotly. May import
dashboard.settings, dashboard.text and the engine.
"""
