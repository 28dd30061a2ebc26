"""Plain Python the pages stand on, tested without a browser: the run registry and its caps (`runs`), a run as the
dashboard keeps it (`records`), its aggregates and frames, the DDBLAB_* settings and limits, control values to a
RunConfig (`run_settings`), sweep jobs, scene links and played scenes. Never imports streamlit or plotly. May
import the engine.
"""
