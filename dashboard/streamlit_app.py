"""The dashboard's entry point (thin): page config, the backend sidebar shared by every page, navigation.

Run it with `python -m dashboard` (binds 127.0.0.1 and passes further arguments to `streamlit run`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `streamlit run dashboard/streamlit_app.py` from a checkout without an install
    sys.path.insert(0, str(ROOT))

from dashboard.settings.env import check_settings  # noqa: E402
from dashboard.widgets.ui import show_error  # noqa: E402
from engine.errors import LabError  # noqa: E402

st.set_page_config(
    page_title="DynamoDB concurrency lab",
    page_icon="🧪",  # an emoji is drawn in the page; a :material/...: favicon is fetched from fonts.gstatic.com
    layout="wide",
    menu_items={
        "About": "A live laboratory for DynamoDB concurrency: pools of real clients, every "
        "call recorded, invariants checked."
    },
)

# Live charts redraw every refresh: without this, Streamlit fades them while each refresh runs (a flicker on a
# projector); they are replaced in place anyway.
st.html(
    "<style>div[data-stale='true'] { opacity: 1 !important; transition: none !important; }"
    # A run header's state badge at most of the heading's size: Streamlit draws a badge at 14 px in any heading.
    "h2 .stMarkdownBadge { font-size: 0.7em !important; }</style>"
)

# `streamlit run` on this file skips python -m dashboard's launch check: a bad DDBLAB_* setting is shown here, on
# every page, and nothing else: not a traceback, nor the app quietly starting on the embedded server. Checked
# before the modules that read the settings are imported (dashboard.settings.limits reads the caps when imported).
try:
    check_settings()
except LabError as e:
    show_error(e)
    st.stop()

from dashboard.widgets import sidebar  # noqa: E402
from dashboard.widgets.registry import get_registry  # noqa: E402

PAGES = Path(__file__).resolve().parent / "app_pages"
page = st.navigation(
    [
        st.Page(PAGES / "run.py", title="Run", icon=":material/play_circle:", url_path="run", default=True),
        st.Page(PAGES / "compare.py", title="Compare safe vs racy", icon=":material/compare:", url_path="compare"),
        st.Page(PAGES / "sweep.py", title="Sweep thread counts", icon=":material/monitoring:", url_path="sweep"),
        st.Page(PAGES / "scenes.py", title="Seed scenes", icon=":material/theater_comedy:", url_path="scenes"),
        st.Page(PAGES / "workload.py", title="Your workload", icon=":material/tune:", url_path="workload"),
        st.Page(
            PAGES / "history.py", title="History: runs, export, import", icon=":material/history:", url_path="history"
        ),
    ]
)
st.sidebar.markdown("## :material/science: DynamoDB concurrency lab")
sidebar.backend_sidebar(get_registry())
page.run()
