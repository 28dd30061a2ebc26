"""Plain Python the pages stand on, tested without a browser: the run registry (`runs`), a run as the dashboard
keeps it (`records`) and an imported one re-judged from its own calls (`import_judge`), its aggregates and frames,
control values to a RunConfig (`run_settings`), links (`links`: a run's, a scene's, a workload's), a pair's counters
(`pair_counters`), sweep jobs and played scenes. Never imports streamlit or plotly. May import
dashboard.settings, dashboard.text and the engine.
"""
