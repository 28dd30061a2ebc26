"""Plain Python the pages stand on, tested without a browser: the run registry (`runs`), a run as the dashboard
keeps it (`records`) and an imported one re-judged from its own calls (`import_judge`), its aggregates and frames,
control values to a RunConfig (`run_settings`), sweep jobs, scene links and played scenes, and user text made
plain (`plaintext`). Never imports streamlit or plotly. May import dashboard.settings and the engine.
"""
